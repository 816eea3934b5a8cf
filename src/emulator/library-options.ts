// startEmulator's options: the CLI's flags as typed values, checked here with the same limits the CLI uses.
import { ACTIVATION_MODES, CLOCK_MODES, isOneOf } from '../protocol/control.js';
import { checkActivation, DEFAULT_FIRST_CALL_DELAY_SECONDS, type ActivationOptions } from './engine/activation.js';
import type { Clock } from '../shared/clock.js';
import { DEFAULT_HOST, PORT_RANGE, hostProblem } from '../shared/host-port.js';
import type { VmSpec } from './engine/fleet.js';
import { MAX_FIRST_CALL_DELAY_SECONDS, TIMING_PROFILES } from './engine/timing.js';
import { normalizeAllowedHost } from './control/request-guard.js';
import { MAX_STREAMS_RANGE, STREAM_BUFFER_KIB_RANGE } from './control/stream.js';
import type { EmulatorOptions, ListenOptions } from './emulator.js';
import { FleetFileError, MAX_REQUEST_VMS_RANGE, loadFleetFile, parseFleet } from './fleet/file.js';
import { IMPACT_NEEDS_TOKEN } from './impact/controller.js';

/** A fleet as a fleet file holds it (docs: README "Fleet files"), or just its list of VMs. */
export type FleetDefinition = readonly VmSpec[] | { readonly vms?: readonly VmSpec[]; readonly [section: string]: unknown };

export interface Address {
  /** 127.0.0.1 when absent. */
  host?: string;
  /** 0 (a free port) when absent. */
  port?: number;
}

export interface StartEmulatorOptions {
  /** A fleet file's path, or the fleet itself; one standalone VM "vm0" when absent. */
  fleet?: string | FleetDefinition;
  /** system (default), manual (moved with advanceClock), or a Clock of your own. */
  clock?: (typeof CLOCK_MODES)[number] | Clock;
  /** realistic (default), dev (60x faster), or a factor. */
  timing?: keyof typeof TIMING_PROFILES | number;
  /** IMDS requests a second per VM before 429; 0 turns the limit off. */
  rateLimit?: number;
  /** Ended events, finished operations and deleted VMs kept; 0 keeps none. */
  historyLimit?: number;
  /** Scheduled Events activation: off (default) or realistic. */
  activation?: (typeof ACTIVATION_MODES)[number];
  /** With realistic activation, how long a VM's first request is held, in seconds. */
  activationDelay?: number;
  /** Keep state in this file across runs. */
  state?: string;
  /** Bearer token the control API requires; the handle sends it. */
  token?: string;
  /** Real impact (docs/impact.md): VMs may be bound to local processes, which their events then signal. Off by default; needs `token`. */
  impact?: boolean;
  /** Host names, besides loopback ones, the control API answers without a token. */
  allowHosts?: readonly string[];
  maxStreams?: number;
  streamBufferBytes?: number;
  maxRequestVms?: number;
  imds?: Address;
  control?: Address;
  /** The servers' pino logger: false (default, silent), true, or pino options. */
  logger?: boolean | object;
}

/** An option startEmulator cannot use; `option` names it. */
export class EmulatorOptionError extends Error {
  override name = 'EmulatorOptionError';
  constructor(
    readonly option: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(option === '' ? `options ${problem}` : `options.${option}: ${problem}`, options);
  }
}

export interface LaunchOptions {
  emulator: EmulatorOptions;
  listen: ListenOptions;
}

/** [choice] Loopback (DEFAULT_HOST) and a free port: a test suite's emulator is private to it and never collides. */
const DEFAULT_PORT = 0;

/** [choice] An unknown option is refused, not ignored: a misspelt `fleets` would silently run the default fleet. */
const KNOWN = new Set<string>([
  'fleet',
  'clock',
  'timing',
  'rateLimit',
  'historyLimit',
  'activation',
  'activationDelay',
  'state',
  'token',
  'impact',
  'allowHosts',
  'maxStreams',
  'streamBufferBytes',
  'maxRequestVms',
  'imds',
  'control',
  'logger',
]);

/** Checks every option; the first problem throws an EmulatorOptionError. */
export function resolveStartOptions(options: StartEmulatorOptions): LaunchOptions {
  if (typeof options !== 'object' || options === null) throw new EmulatorOptionError('', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new EmulatorOptionError(key, `is not an option; known: ${[...KNOWN].join(', ')}`);
  }
  const o = options;
  const emulator: EmulatorOptions = {
    clock: clock(o.clock),
    timingFactor: timing(o.timing),
    activation: activation(o.activation, o.activationDelay),
    // [choice] Silent unless asked: a test runner's output stays the tests'.
    logger: o.logger === undefined ? false : logger(o.logger),
  };
  if (o.fleet !== undefined) emulator.fleet = fleet(o.fleet);
  if (o.rateLimit !== undefined) {
    emulator.rateLimit = check(
      'rateLimit',
      o.rateLimit,
      isNumber(o.rateLimit) && o.rateLimit >= 0,
      'must be a number of requests a second, 0 or more (0 turns it off)',
    );
  }
  if (o.historyLimit !== undefined) emulator.historyLimit = whole('historyLimit', o.historyLimit, { min: 0, max: Number.MAX_SAFE_INTEGER });
  if (o.state !== undefined)
    emulator.statePath = check('state', o.state, typeof o.state === 'string' && o.state !== '', 'must be a file path');
  if (o.token !== undefined) {
    emulator.token = check(
      'token',
      o.token,
      typeof o.token === 'string' && /^\S+$/.test(o.token),
      'must be one non-empty word, without spaces or line breaks',
    );
  }
  if (o.impact !== undefined) {
    emulator.impact = check('impact', o.impact, typeof o.impact === 'boolean', 'must be true or false');
    if (emulator.impact && emulator.token === undefined) throw new EmulatorOptionError('impact', IMPACT_NEEDS_TOKEN);
  }
  if (o.allowHosts !== undefined) emulator.allowHosts = allowHosts(o.allowHosts);
  if (o.maxStreams !== undefined) emulator.maxStreams = whole('maxStreams', o.maxStreams, MAX_STREAMS_RANGE);
  if (o.streamBufferBytes !== undefined) {
    emulator.streamBufferBytes = whole('streamBufferBytes', o.streamBufferBytes, {
      min: STREAM_BUFFER_KIB_RANGE.min * 1024,
      max: STREAM_BUFFER_KIB_RANGE.max * 1024,
    });
  }
  if (o.maxRequestVms !== undefined) emulator.maxRequestVms = whole('maxRequestVms', o.maxRequestVms, MAX_REQUEST_VMS_RANGE);
  return { emulator, listen: { imds: address('imds', o.imds), control: address('control', o.control) } };
}

function check<T>(option: string, value: T, ok: boolean, problem: string): T {
  if (!ok) throw new EmulatorOptionError(option, `${problem}, got ${show(value)}`);
  return value;
}

function whole(option: string, value: unknown, range: { min: number; max: number }): number {
  if (!Number.isSafeInteger(value) || (value as number) < range.min || (value as number) > range.max) {
    throw new EmulatorOptionError(option, `must be a whole number from ${range.min} to ${range.max}, got ${show(value)}`);
  }
  return value as number;
}

function clock(value: StartEmulatorOptions['clock']): NonNullable<StartEmulatorOptions['clock']> {
  if (value === undefined) return 'system';
  if (isOneOf(CLOCK_MODES, value) || isClock(value)) return value;
  throw new EmulatorOptionError('clock', `must be ${CLOCK_MODES.join(', ')} or a Clock, got ${show(value)}`);
}

function logger(value: unknown): boolean | object {
  if (typeof value === 'boolean' || (typeof value === 'object' && value !== null && !Array.isArray(value))) return value;
  throw new EmulatorOptionError('logger', `must be true, false or pino options, got ${show(value)}`);
}

function isClock(v: unknown): v is Clock {
  return typeof v === 'object' && v !== null && typeof (v as Clock).now === 'function' && typeof (v as Clock).mode === 'string';
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function timing(value: StartEmulatorOptions['timing']): number {
  if (value === undefined) return TIMING_PROFILES.realistic;
  if (typeof value === 'string' && Object.hasOwn(TIMING_PROFILES, value)) return TIMING_PROFILES[value];
  if (isNumber(value) && value > 0) return value;
  throw new EmulatorOptionError('timing', `must be ${Object.keys(TIMING_PROFILES).join(', ')} or a positive factor, got ${show(value)}`);
}

function activation(mode: StartEmulatorOptions['activation'], delay: number | undefined): ActivationOptions {
  if (mode !== undefined && !isOneOf(ACTIVATION_MODES, mode))
    throw new EmulatorOptionError('activation', `must be ${ACTIVATION_MODES.join(' or ')}, got ${show(mode)}`);
  if (mode !== 'realistic') {
    // Silently ignoring it would leave the caller wondering why nothing is delayed.
    if (delay !== undefined) throw new EmulatorOptionError('activationDelay', 'applies only with activation: "realistic"');
    return { mode: 'off' };
  }
  const seconds = delay ?? DEFAULT_FIRST_CALL_DELAY_SECONDS;
  const result: ActivationOptions = { mode, firstCallDelaySeconds: seconds };
  try {
    if (!isNumber(seconds)) throw new Error();
    checkActivation(result);
  } catch {
    throw new EmulatorOptionError(
      'activationDelay',
      `must be a number of seconds from 0 to ${MAX_FIRST_CALL_DELAY_SECONDS}, got ${show(delay)}`,
    );
  }
  return result;
}

function allowHosts(names: unknown): string[] {
  if (!Array.isArray(names)) throw new EmulatorOptionError('allowHosts', `must be an array of host names, got ${show(names)}`);
  return names.map((name, i) => {
    try {
      if (typeof name !== 'string') throw new Error(`expected a host name, got ${show(name)}`);
      return normalizeAllowedHost(name);
    } catch (err) {
      throw new EmulatorOptionError(`allowHosts[${i}]`, (err as Error).message);
    }
  });
}

function address(option: 'imds' | 'control', value: Address | undefined): { host: string; port: number } {
  if (value === undefined) return { host: DEFAULT_HOST, port: DEFAULT_PORT };
  if (typeof value !== 'object' || value === null) throw new EmulatorOptionError(option, `must be { host?, port? }, got ${show(value)}`);
  const host = value.host ?? DEFAULT_HOST;
  if (typeof host !== 'string') throw new EmulatorOptionError(`${option}.host`, `must be a host name or address, got ${show(host)}`);
  const problem = hostProblem(host);
  if (problem) throw new EmulatorOptionError(`${option}.host`, problem);
  return { host, port: value.port === undefined ? DEFAULT_PORT : whole(`${option}.port`, value.port, PORT_RANGE) };
}

/** [choice] An object fleet goes through the fleet file's own checks, so both report the same problems. */
function fleet(value: string | FleetDefinition): VmSpec[] {
  try {
    if (typeof value === 'string') return loadFleetFile(value);
    if (typeof value !== 'object' || value === null)
      throw new EmulatorOptionError('fleet', `must be a fleet file's path or a fleet object, got ${show(value)}`);
    let text: string;
    try {
      text = JSON.stringify(Array.isArray(value) ? { vms: value } : value, null, 2);
    } catch (err) {
      throw new EmulatorOptionError('fleet', `cannot be read as JSON data: ${(err as Error).message}`);
    }
    return parseFleet(text, 'fleet.json');
  } catch (err) {
    if (!(err instanceof FleetFileError)) throw err;
    // The JSON's line and column mean nothing to the caller; the field path in the message does.
    const message = typeof value === 'string' ? err.message : err.message.replace(/^fleet\.json:\d+:\d+: /, '');
    throw new EmulatorOptionError('fleet', message, { cause: err });
  }
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}
