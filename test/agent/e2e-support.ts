// The agent and emulator binaries for end-to-end tests: processes that never outlive the tests,
// the emulator's control API, and waits with what was seen so far in their failure messages.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliProcess, emulatorArgs } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

export const fixtures = new URL('./fixtures/', import.meta.url).pathname;
export const node = process.execPath;

export type Log = Record<string, unknown> & { msg?: string; level?: number };

/** A forewarn process whose stdout is JSON log lines. Kill `Proc.all` in an after hook. */
export class Proc extends CliProcess {
  logs(): Log[] {
    return this.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Log);
  }

  async waitForLog(what: string, match: (l: Log) => boolean, timeoutMs = 15_000): Promise<Log> {
    return waitFor(
      () => `${what}\n--- output so far:\n${this.stdout.slice(-4000)}${this.stderr}`,
      () => this.logs().find(match),
      timeoutMs,
    );
  }
}

export interface Emu {
  proc: Proc;
  imdsUrl: string;
  controlUrl: string;
}

export async function startEmulator(
  extra: string[] = [],
  ports: { imds: number; control: number } = { imds: 0, control: 0 },
): Promise<Emu> {
  const proc = new Proc([...emulatorArgs({ ports, rateLimit: 0, logLevel: 'silent' }), ...extra]);
  const [, imdsUrl, controlUrl] = await proc.waitForOutput(/IMDS:\s+(\S+)\nControl:\s+(\S+)/);
  return { proc, imdsUrl: imdsUrl!, controlUrl: controlUrl! };
}

export async function api<T = Record<string, unknown>>(
  emu: Emu,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: T }> {
  const res = await fetch(`${emu.controlUrl}${path}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : {}) as T };
}

/** Creates maintenance and returns its (first) EventId. */
export async function trigger(emu: Emu, body: Record<string, unknown>): Promise<string> {
  const { status, json } = await api<{ events: string[] }>(emu, 'POST', '/v1/operations', body);
  assert.equal(status, 201, JSON.stringify(json));
  return json.events[0]!;
}

export interface EmuEvent {
  id: string;
  status: string;
  notBefore: string | null;
  approvals: { vm: string }[];
}

/** Every live event as GET /v1/events shows it. */
export async function liveEvents(emu: Emu): Promise<EmuEvent[]> {
  const { status, json } = await api<{ events: EmuEvent[] }>(emu, 'GET', '/v1/events');
  assert.equal(status, 200);
  return json.events;
}

export async function liveEvent(emu: Emu, id: string): Promise<EmuEvent | undefined> {
  return (await liveEvents(emu)).find((e) => e.id === id);
}

export function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

export interface RunningAgent {
  proc: Proc;
  url: string;
}

/** Writes the config and starts `forewarn agent` on it (with `args`), once it has started (or logged `until`). */
export async function startAgent(
  file: string,
  config: Record<string, unknown>,
  options: { until?: string; args?: string[]; env?: Record<string, string> } = {},
): Promise<RunningAgent> {
  const until = options.until ?? 'agent started';
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  const proc = new Proc(['agent', '--config', file, ...(options.args ?? [])], options.env);
  await proc.waitForLog(`the agent: ${until}`, (l) => l.msg === until);
  const serving = proc.logs().find((l) => l.msg === 'serving /metrics, /healthz and /readyz');
  return { proc, url: String(serving?.url ?? '') };
}

/** An exec action that runs one of the fixture scripts with node. */
export function execAction(name: string, script: string, ...args: string[]): Record<string, unknown> {
  return { type: 'exec', name, argv: [node, join(fixtures, script), ...args], timeoutSeconds: 120 };
}

/** A metric's value from the agent's /metrics, `labels` as written there (`{phase="prepare"}`); 0 when absent. */
export async function metric(agent: RunningAgent, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${agent.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

export async function readyz(agent: RunningAgent): Promise<{ status: number; reason: string }> {
  const res = await fetch(`${agent.url}/readyz`);
  return { status: res.status, reason: ((await res.json()) as { reason: string }).reason };
}
