// The agent binary with its journal on a small tmpfs that fills up: the event waits, /readyz says
// why, and once space is back the preparation runs once and the approval goes once.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountTmpfs, tmpfsOrSkip, type Tmpfs } from '../support/tmpfs.js';
import { delay, waitFor } from '../support/wait.js';
import { Proc, fixtures, lines, liveEvent, metric, node, readyz, startAgent, startEmulator, trigger } from './e2e-support.js';
import type { Emu } from './e2e-support.js';

describe('agent e2e: the journal disk fills up', () => {
  let fs: Tmpfs | null = null;
  let dir: string;
  let emu: Emu | null = null;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'forewarn-agent-full-'));
  });
  after(async () => {
    Proc.killAll();
    await emu?.proc.stop().catch(() => undefined);
    await fs?.unmount();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds the event while the journal cannot be written, then prepares and approves it once', { timeout: 120_000 }, async (t) => {
    if (!(await tmpfsOrSkip(t))) return;
    fs = await mountTmpfs(256);
    emu = await startEmulator();
    const marker = join(dir, 'marker');
    const journalDir = join(fs.dir, 'forewarn');
    const agent = await startAgent(join(dir, 'agent.json'), {
      endpoint: emu.imdsUrl,
      pollIntervalSeconds: 0.2,
      journal: join(journalDir, 'journal.json'),
      listen: '127.0.0.1:0',
      readyWithinSeconds: 5,
      shutdownGraceSeconds: 2,
      // The default policy: NotBefore is far enough away that the event is held, not prepared unjournaled.
      rules: [{ name: 'reboot', actions: [{ type: 'exec', name: 'drain', argv: [node, join(fixtures, 'record.mjs'), marker, 'drain'] }] }],
    });
    assert.equal(statSync(journalDir).mode & 0o777, 0o700);
    assert.equal(statSync(join(journalDir, 'journal.json')).mode & 0o777, 0o600);
    await waitFor('ready', async () => ((await readyz(agent)).status === 200 ? true : undefined));

    fs.fill();
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
    const notBefore = Date.parse((await liveEvent(emu, id))!.notBefore!);
    assert.ok(notBefore - Date.now() > 300_000, 'NotBefore is beyond prepareWithinSeconds (120 s)');
    await agent.proc.waitForLog(
      'the event held back',
      (l) => l.eventId === id && /cannot be written: this event is held back/.test(String(l.msg)),
    );
    await waitFor('a few failed retries', async () =>
      (await metric(agent, 'forewarn_agent_journal_write_failures_total')) >= 3 ? true : undefined,
    );
    const notReady = await readyz(agent);
    assert.equal(notReady.status, 503);
    assert.match(notReady.reason, /cannot be written: .*ENOSPC|no space left/i);
    assert.match(notReady.reason, new RegExp(id));
    assert.equal(await metric(agent, 'forewarn_agent_journal_held_events'), 1);
    await delay(500);
    assert.deepEqual(lines(marker), [], 'the preparation has not run');
    assert.deepEqual((await liveEvent(emu, id))!.approvals, [], 'not approved');
    assert.equal(
      agent.proc.logs().filter((l) => l.eventId === id && /held back at this step/.test(String(l.msg))).length,
      1,
      'logged once, not per retry',
    );

    fs.free();
    const started = await waitFor('the approval', async () => {
      const e = await liveEvent(emu!, id);
      return e?.status === 'Started' ? e : undefined;
    });
    assert.deepEqual(
      started.approvals.map((a) => a.vm),
      ['vm0'],
      'approved once',
    );
    assert.deepEqual(lines(marker), [`drain ${id} prepare`], 'the preparation ran once');
    await waitFor('ready again', async () => ((await readyz(agent)).status === 200 ? true : undefined));
    assert.equal(await metric(agent, 'forewarn_agent_journal_held_events'), 0);
    assert.equal(await agent.proc.stop(), 0);
  });
});
