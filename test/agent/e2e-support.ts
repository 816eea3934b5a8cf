// The agent and emulator binaries for end-to-end tests: processes that never outlive the tests,
// the emulator's control API, and waits with what was seen so far in their failure messages.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export const repo = new URL('../..', import.meta.url).pathname;
export const fixtures = new URL('./fixtures/', import.meta.url).pathname;
export const node = process.execPath;

export type Log = Record<string, unknown> & { msg?: string; level?: number };

/** A forewarn process: its output kept, its exit awaited. Kill `Proc.all` in an after hook. */
export class Proc {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  static readonly all = new Set<Proc>();

  constructor(args: string[], env: Record<string, string> = {}) {
    const base = { ...process.env };
    delete base.FOREWARN_ENDPOINT;
    this.child = spawn(node, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: repo, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.stdout += d));
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    Proc.all.add(this);
    void this.exited.then(() => Proc.all.delete(this));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  logs(): Log[] {
    return this.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Log);
  }

  async waitForLog(what: string, match: (l: Log) => boolean, timeoutMs = 15_000): Promise<Log> {
    return waitFor(() => `${what}\n--- output so far:\n${this.stdout.slice(-4000)}${this.stderr}`, () => this.logs().find(match), timeoutMs);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    const code = await Promise.race([this.exited, timer]);
    if (code === 'timeout') {
      this.child.kill('SIGKILL');
      throw new Error(`process did not exit within ${timeoutMs} ms of ${signal}`);
    }
    return code;
  }
}

export async function waitFor<T>(what: string | (() => string), probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await delay(everyMs);
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface Emu {
  proc: Proc;
  imdsUrl: string;
  controlUrl: string;
}

export async function startEmulator(extra: string[] = [], ports: { imds: number; control: number } = { imds: 0, control: 0 }): Promise<Emu> {
  const proc = new Proc([
    'emulator',
    '--imds',
    `127.0.0.1:${ports.imds}`,
    '--control',
    `127.0.0.1:${ports.control}`,
    '--clock',
    'manual',
    '--rate-limit',
    '0',
    '--log-level',
    'silent',
    ...extra,
  ]);
  const [, imdsUrl, controlUrl] = await waitFor(`the emulator's URLs\n${proc.stderr}`, () => /IMDS:\s+(\S+)\nControl:\s+(\S+)/.exec(proc.stdout) ?? undefined);
  return { proc, imdsUrl: imdsUrl!, controlUrl: controlUrl! };
}

export async function api<T = Record<string, unknown>>(emu: Emu, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
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

/** Writes the config and starts `forewarn agent` on it, once it has started (or `until` its log line). */
export async function startAgent(file: string, config: Record<string, unknown>, until = 'agent started'): Promise<RunningAgent> {
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  const proc = new Proc(['agent', '--config', file]);
  await proc.waitForLog(`the agent: ${until}`, (l) => l.msg === until);
  const serving = proc.logs().find((l) => l.msg === 'serving /metrics, /healthz and /readyz');
  return { proc, url: String(serving?.url ?? '') };
}

export async function metric(agent: RunningAgent, name: string): Promise<number> {
  const text = await (await fetch(`${agent.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

export async function readyz(agent: RunningAgent): Promise<{ status: number; reason: string }> {
  const res = await fetch(`${agent.url}/readyz`);
  return { status: res.status, reason: ((await res.json()) as { reason: string }).reason };
}
