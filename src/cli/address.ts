// HOST:PORT flags and the URLs printed for them.
import { isIP } from 'node:net';
import { isLoopbackHost } from '../emulator/control/request-guard.js';
import { UsageError } from './errors.js';

export interface HostPort {
  host: string;
  port: number;
}

/** [choice] A bare PORT or `:PORT` means loopback, the safe default for a local emulator. */
const DEFAULT_HOST = '127.0.0.1';

/** Parses `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT`; port 0 asks the OS for a free one. */
export function parseHostPort(text: string, flag: string): HostPort {
  const trimmed = text.trim();
  let host: string;
  let portText: string;
  const bracketed = /^\[([^\]]+)\]:(.*)$/.exec(trimmed);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2]!;
    if (isIP(host) !== 6) throw new UsageError(`${flag}: "${host}" in brackets is not an IPv6 address`);
  } else if (/^\d+$/.test(trimmed)) {
    host = DEFAULT_HOST;
    portText = trimmed;
  } else {
    const i = trimmed.lastIndexOf(':');
    if (i < 0) throw new UsageError(`${flag} must be HOST:PORT (for example 127.0.0.1:8169), got "${text}"`);
    host = trimmed.slice(0, i) || DEFAULT_HOST;
    portText = trimmed.slice(i + 1);
    if (host.includes(':')) throw new UsageError(`${flag}: write an IPv6 address in brackets, as [${host}]:${portText}`);
  }
  if (!/^\d+$/.test(portText)) throw new UsageError(`${flag}: port must be a number from 0 to 65535, got "${portText}"`);
  const port = Number(portText);
  if (port > 65535) throw new UsageError(`${flag}: port must be a number from 0 to 65535, got ${port}`);
  if (/\s|\//.test(host)) throw new UsageError(`${flag}: "${host}" is not a host name or address`);
  return { host, port };
}

/** The control API's own rule for what reaches only this machine, so the CLI's warning and the guard agree. */
export const isLoopback = isLoopbackHost;
