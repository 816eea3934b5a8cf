// A VM's computer name: osProfile.computerName in /metadata/instance/compute, its host name. Azure's
// rules for the names it derives and for names a fleet declares, in one place.
//
// [imds] From Microsoft Learn, "Understand names and instance IDs for Azure Virtual Machine Scale Set
// VMs" (learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-ids):
// - Uniform orchestration: the VM is `{scale-set-name}_{instance-id}`, its computer name is
//   `{computer-name-prefix}{base-36-instance-id}`, the id "always six digits in length", padded with
//   zeros; the page's example, prefix "nsgvmss" and instance 85, is "nsgvmss00002D" (upper case).
// - Flexible orchestration: the VM is `{scale-set-name}_{8-char-guid}`, its computer name
//   `{computer-name-prefix}{6-char-guid}`.
// - The prefix is a property of the scale set model (osProfile.computerNamePrefix); the portal, the
//   CLI and AKS set it to the scale set's name.
// Limits (OSProfile.computerName in the Compute REST API, "Naming rules and restrictions for Azure
// resources", and ARM's own errors): at most 15 characters on Windows, 64 on Linux; Windows names are
// not all digits and hold no ` ~ ! @ # $ % ^ & * ( ) = + _ [ ] { } \ | ; : . ' " , < > / ?; Linux ones
// the same but '.'. A Windows prefix is at most 9 characters ("Windows computer name prefix cannot be
// more than 9 characters long"), so that prefix and suffix fit in 15.
import { createHash } from 'node:crypto';
import type { OrchestrationMode, OsType } from './fleet.js';

/** [imds] The longest computer name: Windows (NetBIOS) 15, Linux 64. */
export const MAX_COMPUTER_NAME: Readonly<Record<OsType, number>> = { Windows: 15, Linux: 64 };
/** [imds] What a scale set adds to its prefix: 6 characters. */
export const COMPUTER_NAME_SUFFIX_LENGTH = 6;
/** [imds] So a prefix is at most 9 characters on Windows, and (Forewarn's reading of the 64) 58 on Linux. */
export const MAX_COMPUTER_NAME_PREFIX: Readonly<Record<OsType, number>> = {
  Windows: MAX_COMPUTER_NAME.Windows - COMPUTER_NAME_SUFFIX_LENGTH,
  Linux: MAX_COMPUTER_NAME.Linux - COMPUTER_NAME_SUFFIX_LENGTH,
};

/** 36^6: six base-36 digits. */
const UNIFORM_IDS = 36 ** COMPUTER_NAME_SUFFIX_LENGTH;

/** The instance id of a Uniform scale-set VM, `<set>_<id>`: the digits after its last '_', as written; null if there are none. */
export function uniformInstanceId(name: string): string | null {
  return /_(\d+)$/.exec(name)?.[1] ?? null;
}

/**
 * [imds] The six base-36 digits a Uniform instance adds to its prefix, upper case and zero-padded:
 * 0 → 000000, 18 → 00000I, 35 → 00000Z, 36 → 000010. [choice] An id past ZZZZZZ wraps round.
 */
export function base36InstanceId(id: string | number): string {
  const digits = String(id);
  let n: number;
  if (digits.length <= 15) n = Number(digits) % UNIFORM_IDS;
  else {
    // Digit by digit, so an id of any length stays exact (n * 10 + 9 < 2^53).
    n = 0;
    for (let i = 0; i < digits.length; i++) n = (n * 10 + digits.charCodeAt(i) - 48) % UNIFORM_IDS;
  }
  return n.toString(36).toUpperCase().padStart(COMPUTER_NAME_SUFFIX_LENGTH, '0');
}

/**
 * [choice] The six characters a Flexible VM adds to its prefix. Azure picks them at random; Forewarn
 * takes the first six of the eight hex digits of a `<set>_<8 hex>` name (which `flexibleNameSuffixes`
 * makes distinct in a scale set), or else six of a SHA-256 of the name: stable across restarts.
 */
export function flexibleComputerNameSuffix(name: string): string {
  const hex = /_([0-9a-fA-F]{8})$/.exec(name)?.[1];
  if (hex !== undefined) return hex.slice(0, COMPUTER_NAME_SUFFIX_LENGTH).toLowerCase();
  return createHash('sha256').update(name).digest('hex').slice(0, COMPUTER_NAME_SUFFIX_LENGTH);
}

/** 2^24: the six hex digits a generated Flexible name shares with its computer name. */
const FLEXIBLE_SPACE = 2 ** 24;
/** An odd multiplier, so i → (i × M + offset) mod 2^24 is one to one. */
const FLEXIBLE_STRIDE = 0x9e3779;

/**
 * [choice] The 8 hex digits of generated Flexible instance i of scale set `scaleSet` (Azure: an 8-character
 * GUID part), as a function of i. Deterministic, random-looking, and distinct in their first six for
 * i < 2^24, so computer names never collide in a generated set: six from a one-to-one map of i
 * (i × an odd number + a seed from the name, mod 2^24), two from a hash.
 */
export function flexibleNameSuffixes(scaleSet: string): (i: number) => string {
  const seed = createHash('sha256').update(scaleSet).digest().readUInt32BE(0);
  return (i) => {
    const six = ((Math.imul(i, FLEXIBLE_STRIDE) >>> 0) + seed) % FLEXIBLE_SPACE;
    const two = Math.imul(i ^ seed, 0x85ebca6b) >>> 24;
    return six.toString(16).padStart(6, '0') + two.toString(16).padStart(2, '0');
  };
}

/**
 * The prefix a scale set's VMs take when it declares none: its name, [imds] cut to 9 characters on
 * Windows (so that the name fits in 15), and [choice] to 58 on Linux (so that it fits in 64).
 */
export function defaultComputerNamePrefix(scaleSet: string, osType: OsType): string {
  return scaleSet.slice(0, MAX_COMPUTER_NAME_PREFIX[osType]);
}

/**
 * The computer name of a VM that declares none. Outside scale sets, its name (what the portal and the
 * CLI give a VM). In a Uniform scale set, the prefix and the base-36 instance id; [choice] a VM whose
 * name has no `_<id>` keeps its name. In a Flexible one, the prefix and six characters of its own.
 * [choice] Derived names are not checked against the rules for declared ones: they come from names the
 * fleet already took, and a fleet that only names its VMs keeps loading.
 */
export function defaultComputerName(vm: {
  name: string;
  scaleSet: string | null;
  orchestrationMode: OrchestrationMode | null;
  computerNamePrefix: string | undefined;
  osType: OsType;
}): string {
  if (vm.scaleSet === null) return vm.name;
  const prefix = vm.computerNamePrefix ?? defaultComputerNamePrefix(vm.scaleSet, vm.osType);
  if (vm.orchestrationMode === 'Flexible') return prefix + flexibleComputerNameSuffix(vm.name);
  const id = uniformInstanceId(vm.name);
  return id === null ? vm.name : prefix + base36InstanceId(id);
}

const CHARACTERS: Readonly<Record<OsType, RegExp>> = { Windows: /^[A-Za-z0-9-]*$/, Linux: /^[A-Za-z0-9.-]*$/ };
const ALLOWED: Readonly<Record<OsType, string>> = { Windows: "letters, digits and '-'", Linux: "letters, digits, '-' and '.'" };

/** Why `name` cannot be a computer name (or prefix) on `osType`, or null when it can. */
function nameProblem(name: string, osType: OsType, prefix: boolean): string | null {
  const max = (prefix ? MAX_COMPUTER_NAME_PREFIX : MAX_COMPUTER_NAME)[osType];
  const what = `a ${osType} computer name${prefix ? ' prefix' : ''}`;
  const rule = `${what} is 1-${max} ${ALLOWED[osType]}`;
  const quoted = JSON.stringify(name);
  if (name.length === 0 || name.length > max) return `${quoted} has ${name.length} characters; ${rule}`;
  const bad = [...name].find((c) => !CHARACTERS[osType].test(c));
  if (bad !== undefined) return `${quoted} holds ${JSON.stringify(bad)}; ${rule}`;
  if (!/^[A-Za-z0-9]/.test(name)) return `${quoted} does not start with a letter or digit, as ${what} must`;
  const ends = prefix ? ['.'] : ['-', '.'];
  if (ends.includes(name[name.length - 1]!)) return `${quoted} ends in '${name[name.length - 1]}', which ${what} cannot`;
  if (osType === 'Windows' && /^\d+$/.test(name)) return `${quoted} is all digits, which ${what} cannot be`;
  return null;
}

/** [imds] Why a declared computer name breaks Azure's rules for `osType`, or null. */
export function computerNameProblem(name: string, osType: OsType): string | null {
  return nameProblem(name, osType, false);
}

/** [imds] Why a declared computerNamePrefix breaks Azure's rules for `osType` (it may end in '-'), or null. */
export function computerNamePrefixProblem(prefix: string, osType: OsType): string | null {
  return nameProblem(prefix, osType, true);
}
