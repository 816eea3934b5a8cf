// `forewarn emulator --link-local`: IMDS at Azure's own address, http://169.254.169.254, for code
// that hard-codes it. The address goes on `lo` (as root, or inside a network namespace, where any
// user is root) with a label of ours, and comes off at a clean stop. Only what carries the label is
// ever removed: an address someone else put there stays, and one left by a killed run is known by
// its label and taken over. A real IMDS answering there (an Azure VM) is never hidden.
import { execFile } from 'node:child_process';
import { DEFAULT_ENDPOINT } from '../client/client.js';
import { CliError } from './errors.js';

/** IMDS's address and port, as code on Azure reaches it. */
export const LINK_LOCAL = { host: new URL(DEFAULT_ENDPOINT).hostname, port: 80 } as const;
/** [choice] The label that proves an address on lo is ours (IPv4 labels are `<device>:<tag>`, 15 characters at most). */
export const LINK_LOCAL_LABEL = 'lo:forewarn';
const PREFIX = `${LINK_LOCAL.host}/32`;
const IP_TIMEOUT_MS = 5_000;
/** How long a real IMDS has to answer before the address counts as free. */
const PROBE_TIMEOUT_MS = 1_500;

export interface LinkLocalClaim {
  /** What was found and done, for the banner. */
  note: string;
  /** Takes the address off lo if this run put it there or took it over; nothing otherwise. */
  release(): Promise<void>;
}

function ip(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ip', args, { timeout: IP_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err === null) return resolve(stdout);
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      reject(
        new Error(missing ? 'the `ip` command is not installed (Debian/Ubuntu: apt-get install iproute2)' : stderr.trim() || err.message),
      );
    });
  });
}

interface LoState {
  up: boolean;
  /** The label of 169.254.169.254/32 on lo, or null when lo does not have it. */
  label: string | null;
}

async function loState(): Promise<LoState> {
  const [lo] = JSON.parse(await ip(['-j', 'addr', 'show', 'dev', 'lo'])) as {
    flags?: string[];
    addr_info?: { family: string; local: string; prefixlen: number; label?: string }[];
  }[];
  const entry = lo?.addr_info?.find((a) => a.family === 'inet' && a.local === LINK_LOCAL.host && a.prefixlen === 32);
  return { up: lo?.flags?.includes('UP') ?? false, label: entry === undefined ? null : (entry.label ?? 'lo') };
}

/** True when something already answers HTTP at 169.254.169.254:80 from here: a real IMDS, or another emulator. */
async function somethingAnswers(): Promise<boolean> {
  try {
    await fetch(`http://${LINK_LOCAL.host}/metadata/instance?api-version=2021-02-01`, {
      headers: { Metadata: 'true' },
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    return true;
  } catch {
    return false;
  }
}

function needsPrivilege(detail: string): CliError {
  return new CliError(
    `--link-local cannot add ${PREFIX} to lo (${detail}). It needs CAP_NET_ADMIN: run it as root (sudo), ` +
      `or inside a network namespace of its own (unshare --user --map-root-user --net forewarn emulator --link-local), ` +
      `or add the address yourself (sudo ip addr add ${PREFIX} dev lo) and run --imds ${LINK_LOCAL.host}:80 as a user allowed port 80`,
  );
}

/** Puts 169.254.169.254/32 on lo (and lo up, as a new namespace's is down), unless a real IMDS answers there. */
export async function claimLinkLocal(): Promise<LinkLocalClaim> {
  if (process.platform !== 'linux') throw new CliError(`--link-local works on Linux only (this is ${process.platform})`);
  let state: LoState;
  try {
    state = await loState();
  } catch (err) {
    throw new CliError(`--link-local: cannot read lo's addresses: ${(err as Error).message}`);
  }
  if (state.label === null || state.label === LINK_LOCAL_LABEL) {
    // Ours or free: whatever answers there would be hidden from every process here, or is another emulator.
    if (state.up && (await somethingAnswers())) {
      throw new CliError(
        `--link-local: something already answers at http://${LINK_LOCAL.host} (a real IMDS on an Azure VM, or another emulator); ` +
          'taking the address would hide it from every process in this network namespace. Run the emulator in a namespace of its own',
      );
    }
  }
  let note: string;
  let ours = false;
  if (state.label === null) {
    try {
      if (!state.up) await ip(['link', 'set', 'lo', 'up']);
      await ip(['addr', 'add', PREFIX, 'dev', 'lo', 'label', LINK_LOCAL_LABEL]);
    } catch (err) {
      const detail = (err as Error).message;
      if (/not permitted|permission/i.test(detail)) throw needsPrivilege(detail);
      throw new CliError(`--link-local: cannot add ${PREFIX} to lo: ${detail}`);
    }
    ours = true;
    note = `added ${PREFIX} to lo (label ${LINK_LOCAL_LABEL}); removed at a clean stop`;
  } else if (state.label === LINK_LOCAL_LABEL) {
    ours = true;
    note = `${PREFIX} on lo was left by an emulator that did not stop cleanly (label ${LINK_LOCAL_LABEL}): taken over, removed at a clean stop`;
  } else {
    note = `${PREFIX} was already on lo (label ${state.label}, not ours): used as it is, and left there`;
  }
  return {
    note,
    async release() {
      if (!ours) return;
      ours = false;
      // Only if it still carries our label: someone may have replaced it meanwhile.
      const now = await loState().catch(() => null);
      if (now?.label === LINK_LOCAL_LABEL) await ip(['addr', 'del', PREFIX, 'dev', 'lo']).catch(() => undefined);
    },
  };
}
