// HOST:PORT, the one reading of "where to listen" for every flag (--imds, --control), the agent
// config's `listen` and the library's { host, port } options. Neutral ground: cli, emulator and agent import it.
import { isIP } from 'node:net';

export interface HostPort {
  host: string;
  port: number;
}

/** TCP ports a server may be given; 0 asks the OS for a free one. */
export const PORT_RANGE = { min: 0, max: 65_535 } as const;

/** [choice] A bare PORT or `:PORT` means loopback, the safe default for a local emulator or agent. */
export const DEFAULT_HOST = '127.0.0.1';

/** What was wrong: the text's overall form, its port, or its host. */
export type HostPortProblemKind = 'form' | 'port' | 'host';

/** A HOST:PORT that cannot be used; `field` names the flag or setting it came from. */
export class HostPortError extends Error {
  override name = 'HostPortError';
  constructor(
    readonly field: string,
    readonly problem: string,
    readonly kind: HostPortProblemKind,
  ) {
    super(`${field}: ${problem}`);
  }
}

/**
 * Parses `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (surrounding spaces ignored). Throws a
 * HostPortError naming `field` and the problem; `example` shows the form in that message.
 */
export function parseHostPort(text: string, field: string, example = `${DEFAULT_HOST}:8169`): HostPort {
  const fail = (problem: string, kind: HostPortProblemKind): never => {
    throw new HostPortError(field, problem, kind);
  };
  const trimmed = text.trim();
  const form = (): never => fail(`expected HOST:PORT (e.g. ${example}), got "${text}"`, 'form');
  let host: string;
  let portText: string;
  const bracketed = /^\[([^\]]*)\]:(.*)$/.exec(trimmed);
  if (bracketed) {
    host = bracketed[1]!;
    portText = bracketed[2]!;
    if (isIP(host) !== 6) fail(`"${host}" in brackets is not an IPv6 address`, 'host');
  } else if (/^\d+$/.test(trimmed)) {
    host = DEFAULT_HOST;
    portText = trimmed;
  } else {
    const i = trimmed.lastIndexOf(':');
    // No port at all, or `[::1]`, `::1`, `a:b:80`: nothing says where the port is.
    if (i < 0 || trimmed.startsWith('[')) return form();
    host = trimmed.slice(0, i) || DEFAULT_HOST;
    portText = trimmed.slice(i + 1);
    if (host.includes(':')) return isIP(host) === 6 ? fail(`write an IPv6 address in brackets, as [${host}]:${portText}`, 'host') : form();
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > PORT_RANGE.max)
    fail(`port must be a number from ${PORT_RANGE.min} to ${PORT_RANGE.max}, got "${portText}"`, 'port');
  const problem = hostProblem(host);
  if (problem) fail(problem, 'host');
  return { host, port };
}

/** What is wrong with a host name or address as given to listen (bare IPv6, no brackets), or null. */
export function hostProblem(host: string): string | null {
  if (host.trim() === '' || /[\s/[\]@]/.test(host)) return `"${host}" is not a host name or address`;
  if (host.includes(':') && isIP(host) !== 6) return `"${host}" is not a host name or address`;
  return null;
}

/** `host:port`, an IPv6 address in brackets: how a listening address is written back. */
export function formatHostPort(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}
