// The agent binary SIGKILLed while an exec action runs, and restarted at once, round after round:
// never two copies of the action at once, the action completes, the event is approved once.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { delay, waitFor } from '../support/wait.js';
import { Proc, fixtures, lines, liveEvent, node, startAgent, startEmulator, trigger } from './e2e-support.js';
import type { Emu, RunningAgent } from './e2e-support.js';

const ROUNDS = 8;
/** How long the action runs: longer than an agent takes to restart, so a second copy would overlap it. */
const ACTION_MS = 2500;

describe('agent e2e: SIGKILL mid-action, restart at once', { skip: process.platform === 'win32' && 'the guard is POSIX only' }, () => {
  let dir: string;
  let emu: Emu | null = null;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'forewarn-agent-kill-'));
  });
  after(async () => {
    Proc.killAll();
    await emu?.proc.stop().catch(() => undefined);
    // Let any copy still sleeping finish before its directory goes.
    await delay(ACTION_MS);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`never runs two copies of an action at once (${ROUNDS} rounds)`, { timeout: 240_000 }, async () => {
    emu = await startEmulator();
    const file = join(dir, 'agent.json');
    const config = {
      endpoint: emu.imdsUrl,
      pollIntervalSeconds: 0.2,
      journal: join(dir, 'journal.json'),
      listen: null,
      shutdownGraceSeconds: 2,
      rules: [
        {
          name: 'reboot',
          actions: [
            { type: 'exec', name: 'prep', argv: [node, join(fixtures, 'overlap.mjs'), dir, String(ACTION_MS)], timeoutSeconds: 60 },
          ],
        },
      ],
    };
    let agent: RunningAgent = await startAgent(file, config);
    for (let round = 1; round <= ROUNDS; round++) {
      const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
      await waitFor(
        `round ${round}: the action to start`,
        () => (lines(join(dir, 'runs')).some((l) => l.startsWith(`start ${id}`)) ? true : undefined),
        15_000,
        10,
      );
      // Kill at a different point of the action each round.
      await delay(((round - 1) * ACTION_MS) / ROUNDS);
      await agent.proc.stop('SIGKILL');
      agent = await startAgent(file, config);
      const started = await waitFor(
        () => `round ${round}: the approval\n${agent.proc.stdout.slice(-3000)}`,
        async () => {
          const e = await liveEvent(emu!, id);
          return e?.status === 'Started' ? e : undefined;
        },
        30_000,
      );
      assert.deepEqual(
        started.approvals.map((a) => a.vm),
        ['vm0'],
        `round ${round}: approved once`,
      );
      const runs = lines(join(dir, 'runs')).filter((l) => l.includes(` ${id} `));
      assert.ok(
        runs.some((l) => l.startsWith('end ')),
        `round ${round}: the action completed`,
      );
    }
    await agent.proc.stop();
    const overlaps = lines(join(dir, 'overlaps'));
    const rounds = new Set(overlaps.map((l) => l.split(' ')[0])).size;
    assert.deepEqual(overlaps, [], `two copies ran at once in ${rounds} of ${ROUNDS} rounds`);
  });
});
