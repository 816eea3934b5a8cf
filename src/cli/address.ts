// HOST:PORT flags: the shared parser (src/shared/host-port.ts), its problems as usage errors (exit 2).
import { isLoopbackHost } from '../emulator/control/request-guard.js';
import { HostPortError, parseHostPort as parse, type HostPort } from '../shared/host-port.js';
import { UsageError } from './errors.js';

export type { HostPort };

/** Parses `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` given to `flag`; port 0 asks the OS for a free one. */
export function parseHostPort(text: string, flag: string): HostPort {
  try {
    return parse(text, flag);
  } catch (err) {
    if (err instanceof HostPortError) throw new UsageError(err.message);
    throw err;
  }
}

/** The control API's own rule for what reaches only this machine, so the CLI's warning and the guard agree. */
export const isLoopback = isLoopbackHost;
