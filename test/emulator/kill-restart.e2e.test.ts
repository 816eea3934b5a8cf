// kill -9 at a random moment loses nothing acknowledged: the `forewarn emulator` process with --state is
// driven by concurrent control changes, every 2xx recorded, killed with SIGKILL, and restarted on the
// same file; each acknowledged create, approval, cancel and complete must be in what it restarts from.
// FOREWARN_KILL_TEST_ROOT runs another checkout's CLI (e.g. the code before acknowledgements waited).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { EngineEvent, EngineSnapshot } from '../../src/emulator/engine/engine.js';
import { loadStateFile } from '../../src/emulator/state/file.js';
import { cliCommand, emulatorArgs, repo } from '../support/cli.js';
import { caller, type Call } from '../support/control.js';
import { tempDir } from '../support/temp.js';

const OTHER_ROOT = process.env.FOREWARN_KILL_TEST_ROOT;
const ROUNDS = 6;
// Keeps every round's history, so nothing acknowledged is pruned before it is checked (older checkouts keep everything and lack the flag).
const HISTORY = process.env.FOREWARN_KILL_TEST_ROOT ? [] : ['--history-limit', '1000000'];
const VMS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const dir = tempDir('kill');

type Ack =
  | { kind: 'create'; operation: string; event: string }
  | { kind: 'approve'; event: string; vm: string }
  | { kind: 'cancel' | 'complete'; event: string };

async function startCli(statePath: string): Promise<{ child: ChildProcess; control: Call }> {
  const args = [...emulatorArgs({ state: statePath, logLevel: 'warn' }), ...HISTORY];
  const [cmd, argv] = OTHER_ROOT ? [process.execPath, ['--import', 'tsx', join(OTHER_ROOT, 'src/cli/main.ts'), ...args]] : cliCommand(args);
  const child = spawn(cmd, argv, { cwd: OTHER_ROOT ?? repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /^Control:\s+(http:\/\/\S+)$/m.exec(out)?.[1];
      if (found) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`the emulator exited (${code}) before it listened: ${stderr}`)));
  });
  return { child, control: caller(url) };
}

/** One VM's churn until the process dies: every 2xx is an acknowledged change. */
async function churn(control: Call, vm: string, acks: Ack[], alive: () => boolean): Promise<void> {
  try {
    while (alive()) {
      const created = await control('POST', '/v1/operations', { type: 'freeze', vms: [vm] });
      if (created.status !== 201) return;
      const event = created.json.events[0] as string;
      acks.push({ kind: 'create', operation: created.json.operation, event });
      if (Math.random() < 0.4) {
        if ((await control('POST', `/v1/events/${event}/cancel`)).status !== 200) return;
        acks.push({ kind: 'cancel', event });
        continue;
      }
      if ((await control('POST', `/v1/events/${event}/approve`, { vm })).status !== 200) return;
      acks.push({ kind: 'approve', event, vm });
      if ((await control('POST', `/v1/events/${event}/complete`)).status !== 200) return;
      acks.push({ kind: 'complete', event });
    }
  } catch {
    // The connection died with the process.
  }
}

/** The acknowledged changes missing from a saved state. */
function missing(snapshot: EngineSnapshot, acks: readonly Ack[]): Ack[] {
  const operations = new Set(snapshot.operations.map((o) => o.id));
  const live = new Map(snapshot.events.map((e) => [e.id, e]));
  const ended = new Map(snapshot.ended.map((e) => [e.id, e]));
  const eventOf = (id: string): EngineEvent | null | undefined => live.get(id) ?? ended.get(id)?.event;
  return acks.filter((ack) => {
    switch (ack.kind) {
      case 'create':
        return !operations.has(ack.operation) || eventOf(ack.event) === undefined;
      case 'approve':
        return !eventOf(ack.event)?.approvals.some((a) => a.vm === ack.vm);
      case 'cancel':
        return ended.get(ack.event)?.cancelled !== true;
      case 'complete':
        return ended.get(ack.event)?.cancelled !== false;
    }
  });
}

describe('kill -9 and restart', () => {
  it(`keeps every acknowledged change across ${ROUNDS} SIGKILLs at random moments`, { timeout: 120_000 }, async (t) => {
    const statePath = join(dir, 'state.json');
    let totalAcks = 0;
    const lost: Ack[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const { child, control } = await startCli(statePath);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (round === 1) for (const name of VMS) assert.equal((await control('POST', '/v1/vms', { name })).status, 201);
      const acks: Ack[] = [];
      let alive = true;
      const workers = VMS.map((vm) => churn(control, vm, acks, () => alive));
      // A random moment, after the churn is well under way.
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 900));
      child.kill('SIGKILL');
      await exited;
      alive = false;
      await Promise.all(workers);

      // What a restart reads: every acknowledged change must be there.
      const saved = loadStateFile(statePath)!;
      const gone = missing(saved, acks);
      t.diagnostic(`round ${round}: ${acks.length} acknowledged, ${gone.length} lost`);
      totalAcks += acks.length;
      lost.push(...gone);
    }
    // The last restart comes up on the file and serves what was acknowledged.
    const { child, control } = await startCli(statePath);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const saved = loadStateFile(statePath)!;
    const last = saved.operations.at(-1)!;
    assert.equal((await control('GET', `/v1/operations/${last.id}`)).status, 200);
    child.kill('SIGTERM');
    await exited;

    t.diagnostic(`total: ${totalAcks} acknowledged, ${lost.length} lost`);
    assert.ok(totalAcks > ROUNDS * 20, `only ${totalAcks} changes were acknowledged`);
    assert.deepEqual(lost, [], `${lost.length} of ${totalAcks} acknowledged changes were lost`);
  });
});
