// The agent binary against the emulator binary: what a VM would live through, end to end.
// One emulator serves the file's single-VM tests, reset between the stories that need a clean one;
// the two-VM suite and the emulator-restart story start their own.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { closedPort } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { delay, waitFor } from '../support/wait.js';
import { Proc, api, execAction, fixtures, lines, metric, startAgent, startEmulator, trigger } from './e2e-support.js';
import type { Emu, RunningAgent } from './e2e-support.js';

after(() => Proc.killAll());

const dir = tempDir('agent-e2e');
let emu: Emu;
before(async () => {
  emu = await startEmulator();
});
after(() => emu?.proc.stop());

/** Back to the emulator's start state, for a story that needs it clean. */
async function reset(target: Emu = emu): Promise<void> {
  assert.equal((await api(target, 'POST', '/v1/reset')).status, 200);
}

interface EmuEvent {
  id: string;
  status: string;
  startedBy: string | null;
  approvals: { vm: string }[];
}

/** The event's internal state, or null once it has ended. */
async function eventState(target: Emu, id: string): Promise<EmuEvent | null> {
  const { status, json } = await api<{ event: EmuEvent }>(target, 'GET', `/v1/events/${id}`);
  return status === 404 ? null : json.event;
}

async function waitForEvent(
  target: Emu,
  id: string,
  what: string,
  ok: (e: EmuEvent | null) => boolean,
  timeoutMs = 15_000,
): Promise<EmuEvent | null> {
  let last: EmuEvent | null = null;
  await waitFor(
    () => `${what} (last: ${JSON.stringify(last)})`,
    async () => {
      last = await eventState(target, id);
      return ok(last);
    },
    timeoutMs,
  );
  return last;
}

function baseConfig(endpoint: string, rest: Record<string, unknown>): Record<string, unknown> {
  return {
    endpoint,
    pollIntervalSeconds: 0.2,
    journal: join(dir, 'journal.json'),
    listen: '127.0.0.1:0',
    readyWithinSeconds: 3,
    shutdownGraceSeconds: 2,
    ...rest,
  };
}

/** The rule of the crash stories: record.mjs drains (`actions`), then rejoins into `marker` once the event is over. */
function rebootRule(marker: string, actions: Record<string, unknown>[]): Record<string, unknown> {
  return { name: 'reboot', actions, approval: 'after-actions', onComplete: [execAction('rejoin', 'record.mjs', marker, 'complete')] };
}

describe('agent e2e: one VM, the common stories', () => {
  let agent: RunningAgent;
  const marker = join(dir, 'marker');
  const echoed = join(dir, 'echoed.json');
  const pwned = join(dir, 'pwned');
  const description = (target: string) => `$(touch ${target}); rm -rf / \`id\``;

  before(async () => {
    agent = await startAgent(
      join(dir, 'agent.yaml'),
      baseConfig(`${emu.imdsUrl}/vms/vm0`, {
        rules: [
          {
            name: 'metachars',
            match: { description: 'touch' },
            actions: [execAction('echo', 'echo-event.mjs', echoed)],
            approval: 'never',
          },
          {
            name: 'failing-drain',
            match: { description: '^fail-drain' },
            actions: [execAction('drain', 'fail.mjs')],
            approval: 'after-actions',
          },
          {
            name: 'held',
            match: { description: '^hold' },
            actions: [execAction('drain', 'record.mjs', marker, 'drain')],
            approval: 'after-actions',
            approvalMarginSeconds: 600,
            onCancel: [execAction('undo', 'record.mjs', marker, 'cancel')],
          },
          { name: 'user-reboot', match: { eventSource: 'User', eventType: 'Reboot' }, approval: 'immediately' },
          { name: 'short-freeze', match: { eventType: 'Freeze', durationInSeconds: { max: 9 } }, approval: 'immediately' },
          {
            name: 'reboot',
            match: { eventType: ['Reboot', 'Redeploy'] },
            actions: [execAction('drain', 'record.mjs', marker, 'drain')],
            approval: 'after-actions',
            onComplete: [execAction('rejoin', 'record.mjs', marker, 'complete')],
            onCancel: [execAction('undo', 'record.mjs', marker, 'cancel')],
          },
        ],
      }),
    );
  });
  after(() => agent?.proc.stop());

  it('approves a user reboot at once', async () => {
    const id = await trigger(emu, { type: 'restart', vms: ['vm0'] });
    const e = await waitForEvent(emu, id, 'the reboot to start', (e) => e?.status === 'Started');
    assert.equal(e!.startedBy, 'approval');
    assert.deepEqual(
      e!.approvals.map((a) => a.vm),
      ['vm0'],
    );
    await api(emu, 'POST', `/v1/events/${id}/complete`);
  });

  it('approves a short Freeze at once', async () => {
    const id = await trigger(emu, { type: 'freeze', vms: ['vm0'] });
    const e = await waitForEvent(emu, id, 'the freeze to start', (e) => e?.status === 'Started');
    assert.equal(e!.startedBy, 'approval');
  });

  it('runs the drain script, then approves; recovers once the event is over', async () => {
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
    const e = await waitForEvent(emu, id, 'the reboot to start', (e) => e?.status === 'Started');
    assert.equal(e!.startedBy, 'approval');
    await agent.proc.waitForLog('the approval', (l) => l.eventId === id && l.msg === 'approved');
    assert.deepEqual(
      lines(marker).filter((l) => l.includes(id)),
      [`drain ${id} prepare`],
    );
    // The drain finished before the approval went out.
    const logs = agent.proc.logs().filter((l) => l.eventId === id);
    const drained = logs.findIndex((l) => l.msg === 'action succeeded');
    const approved = logs.findIndex((l) => l.msg === 'approved');
    assert.ok(drained >= 0 && approved > drained, 'drain, then approval');
    assert.equal((await api(emu, 'POST', `/v1/events/${id}/complete`)).status, 200);
    await waitFor(
      () => `onComplete\n${agent.proc.stdout.slice(-4000)}`,
      () => lines(marker).includes(`complete ${id} complete`),
    );
    await agent.proc.waitForLog('the event to be done', (l) => l.eventId === id && l.msg === 'done with this event');
  });

  it('does not approve when the drain fails: the event starts at NotBefore', async () => {
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'], description: 'fail-drain: the load balancer refuses' });
    await agent.proc.waitForLog(
      'the failed preparation',
      (l) => l.eventId === id && l.msg === 'preparation did not succeed: not approving; the event starts at NotBefore',
    );
    await delay(500);
    const still = await eventState(emu, id);
    assert.equal(still!.status, 'Scheduled');
    assert.deepEqual(still!.approvals, []);
    await api(emu, 'POST', '/v1/clock/advance', { seconds: 901 });
    const e = await waitForEvent(emu, id, 'the reboot to start at NotBefore', (e) => e?.status === 'Started');
    assert.equal(e!.startedBy, 'notBefore');
    assert.deepEqual(e!.approvals, []);
    await api(emu, 'POST', `/v1/events/${id}/complete`);
  });

  it('runs onCancel when a Scheduled event is cancelled', async () => {
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'], description: 'hold: waiting out a long margin' });
    await agent.proc.waitForLog('the margin wait', (l) => l.eventId === id && l.msg === 'holding the approval back for the margin');
    assert.equal((await api(emu, 'POST', `/v1/events/${id}/cancel`)).status, 200);
    await waitFor('onCancel', () => lines(marker).includes(`cancel ${id} cancel`));
    assert.deepEqual(
      lines(marker).filter((l) => l.includes(id)),
      [`drain ${id} prepare`, `cancel ${id} cancel`],
    );
    assert.ok(!agent.proc.logs().some((l) => l.eventId === id && l.msg === 'approved'));
  });

  it('handles a hardware failure that arrives Started: actions run, no approval, onComplete after it ends', async () => {
    const id = await trigger(emu, { type: 'hardware-failure', vms: ['vm0'] });
    await waitFor('the drain', () => lines(marker).includes(`drain ${id} prepare`));
    await agent.proc.waitForLog('the arrived-Started warning', (l) => l.eventId === id && /arrived already Started/.test(String(l.msg)));
    assert.deepEqual((await eventState(emu, id))!.approvals, []);
    await api(emu, 'POST', `/v1/events/${id}/complete`);
    await waitFor('onComplete', () => lines(marker).includes(`complete ${id} complete`));
    assert.ok(!agent.proc.logs().some((l) => l.eventId === id && (l.msg === 'approved' || l.msg === 'approval failed; retrying')));
  });

  it('passes event data with shell metacharacters to the script as plain data', async () => {
    const text = description(pwned);
    const id = await trigger(emu, { type: 'platform-redeploy', vms: ['vm0'], description: text });
    const got = await waitFor('the echo script', () =>
      existsSync(echoed)
        ? (JSON.parse(readFileSync(echoed, 'utf8')) as { stdin: { description: string; eventId: string }; description: string })
        : undefined,
    );
    assert.equal(got.stdin.eventId, id);
    assert.equal(got.stdin.description, text);
    assert.equal(got.description, text);
    await delay(300);
    assert.equal(existsSync(pwned), false, 'no shell ran the description');
    await api(emu, 'POST', `/v1/events/${id}/cancel`);
  });

  it('serves metrics, health and readiness', async () => {
    assert.equal((await fetch(`${agent.url}/healthz`)).status, 200);
    const ready = await fetch(`${agent.url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    assert.ok((await metric(agent, 'forewarn_agent_approvals_sent_total', '{role="leader"}')) >= 3);
    assert.ok((await metric(agent, 'forewarn_agent_actions_failed_total', '{phase="prepare",action="drain"}')) >= 1);
    assert.ok((await metric(agent, 'forewarn_agent_events_seen_total', '{type="Reboot",status="Scheduled"}')) >= 1);
    assert.ok((await metric(agent, 'forewarn_agent_document_incarnation')) > 0);
    assert.ok((await metric(agent, 'process_resident_memory_bytes')) > 0);
  });
});

describe('agent e2e: two VMs in an availability set', () => {
  let pair: Emu;
  const agents: Record<string, RunningAgent> = {};
  const marker = join(dir, 'pair-marker');

  before(async () => {
    pair = await startEmulator(['--fleet', join(fixtures, 'availability-set.yaml')]);
    for (const vm of ['web-0', 'web-1']) {
      agents[vm] = await startAgent(
        join(dir, `${vm}.yaml`),
        baseConfig(`${pair.imdsUrl}/vms/${vm}`, {
          journal: join(dir, `${vm}.journal.json`),
          leader: { mode: 'first', standby: { afterSeconds: 1, events: 'user' } },
          rules: [{ name: 'all', actions: [execAction('drain', 'record.mjs', marker, vm)], approval: 'after-actions' }],
        }),
      );
    }
  });
  after(async () => {
    for (const a of Object.values(agents)) if (a.proc.running) await a.proc.stop();
    await pair?.proc.stop();
  });

  it('only the leader (first in Resources) approves', async () => {
    const id = await trigger(pair, { type: 'platform-reboot', vms: ['web-0', 'web-1'] });
    const e = await waitForEvent(pair, id, 'the reboot to start', (e) => e?.status === 'Started');
    assert.deepEqual(
      e!.approvals.map((a) => a.vm),
      ['web-0'],
    );
    // Both VMs prepared; only one approved.
    await waitFor('both drains', () => lines(marker).filter((l) => l.includes(id)).length === 2);
    await agents['web-1']!.proc.waitForLog('the follower to stand aside', (l) => l.eventId === id && l.msg === 'not approving');
    await api(pair, 'POST', `/v1/events/${id}/complete`);
  });

  it('with the leader stopped, the standby approves a User event after afterSeconds', async () => {
    assert.equal(await agents['web-0']!.proc.stop(), 0);
    const id = await trigger(pair, { type: 'restart', vms: ['web-0'] });
    const seen = await agents['web-1']!.proc.waitForLog('the standby to see it', (l) => l.eventId === id && l.msg === 'new event');
    const e = await waitForEvent(pair, id, 'the standby approval', (e) => e?.status === 'Started');
    assert.deepEqual(
      e!.approvals.map((a) => a.vm),
      ['web-1'],
    );
    const approved = await agents['web-1']!.proc.waitForLog('the approval log', (l) => l.eventId === id && l.msg === 'approved');
    assert.equal(approved.as, 'standby');
    const waited = Date.parse(String(approved.time)) - Date.parse(String(seen.time));
    assert.ok(waited >= 900, `standby waited ${waited} ms`);
  });
});

/** Forwards to IMDS and counts the approvals (POSTs) that pass, across agent restarts. */
async function countingForwarder(target: string): Promise<{ url: string; posts: () => number; server: Server }> {
  let posts = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') posts += 1;
      const headers: Record<string, string> = {};
      for (const h of ['metadata', 'content-type', 'if-none-match']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
      fetch(`${target}${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}) }).then(
        async (r) => {
          const out: Record<string, string> = {};
          for (const h of ['content-type', 'etag']) if (r.headers.get(h) !== null) out[h] = r.headers.get(h)!;
          const body = Buffer.from(await r.arrayBuffer());
          res.writeHead(r.status, out).end(body);
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, posts: () => posts, server };
}

describe('agent e2e: crashes and a flaky IMDS', () => {
  // What a failed story leaves running, but the shared emulator.
  afterEach(() => Proc.killAll(emu.proc));

  it(
    'SIGKILLed mid-action and restarted: the finished action is not re-run, the interrupted one is, the approval goes once',
    { timeout: 120_000 },
    async () => {
      await reset();
      const forwarder = await countingForwarder(emu.imdsUrl);
      const marker = join(dir, 'kill-marker');
      const file = join(dir, 'kill.yaml');
      const config = baseConfig(forwarder.url, {
        journal: join(dir, 'kill-journal.json'),
        rules: [
          rebootRule(marker, [execAction('checkpoint', 'record.mjs', marker, 'checkpoint'), execAction('drain', 'slow.mjs', marker)]),
        ],
      });
      try {
        let agent = await startAgent(file, config);
        const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
        const started = await waitFor('the slow drain to start', () => lines(marker).find((l) => l.startsWith(`slow-start ${id}`)));
        await agent.proc.stop('SIGKILL');
        // The orphaned script would finish in a minute; end it as the reboot would have.
        process.kill(Number(started.split(' ')[2]), 'SIGKILL');
        assert.equal((await eventState(emu, id))!.status, 'Scheduled');

        agent = await startAgent(file, config);
        const e = await waitForEvent(emu, id, 'the approval after restart', (e) => e?.status === 'Started');
        assert.deepEqual(
          e!.approvals.map((a) => a.vm),
          ['vm0'],
        );
        const mine = lines(marker).filter((l) => l.includes(id));
        assert.equal(mine.filter((l) => l.startsWith('checkpoint')).length, 1, 'the finished action ran once');
        assert.equal(mine.filter((l) => l.startsWith('slow-start')).length, 2, 'the interrupted action ran again');
        assert.ok(agent.proc.logs().some((l) => l.eventId === id && /interrupted/.test(String(l.msg))));
        assert.equal(forwarder.posts(), 1);

        // Killed again after approving: the restarted agent does not approve again.
        await agent.proc.waitForLog('the approval to be journaled', (l) => l.eventId === id && l.msg === 'approved');
        await agent.proc.stop('SIGKILL');
        agent = await startAgent(file, config);
        await agent.proc.waitForLog('the journal to be consulted', (l) => l.eventId === id && /already approved/.test(String(l.msg)));
        await api(emu, 'POST', `/v1/events/${id}/complete`);
        await waitFor('onComplete', () => lines(marker).includes(`complete ${id} complete`));
        assert.equal(forwarder.posts(), 1, 'one approval in all');
        assert.equal(lines(marker).filter((l) => l.startsWith(`checkpoint ${id}`)).length, 1);
        await agent.proc.stop();
      } finally {
        forwarder.server.close();
      }
    },
  );

  it('recovers, after a restart, from an event that ended while the agent was down', async () => {
    await reset();
    const marker = join(dir, 'away-marker');
    const file = join(dir, 'away.yaml');
    const config = baseConfig(emu.imdsUrl, {
      journal: join(dir, 'away-journal.json'),
      rules: [rebootRule(marker, [execAction('drain', 'record.mjs', marker, 'drain')])],
    });
    let agent = await startAgent(file, config);
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
    await waitForEvent(emu, id, 'the approval', (e) => e?.status === 'Started');
    await agent.proc.waitForLog('the approval to be journaled', (l) => l.eventId === id && l.msg === 'approved');
    // The VM reboots: the agent dies with it, and the event is over when it comes back.
    await agent.proc.stop('SIGKILL');
    await api(emu, 'POST', `/v1/events/${id}/complete`);
    agent = await startAgent(file, config);
    await waitFor('recovery', () => lines(marker).includes(`complete ${id} complete`));
    await agent.proc.waitForLog(
      'the decision',
      (l) => l.eventId === id && l.outcome === 'completed' && /while the agent was not running/.test(String(l.msg)),
    );
    await agent.proc.stop();
  });

  // Its own emulator, which it stops and starts again on the same ports from its state file.
  it(
    'rides out 429, 500, 410, dropped connections, latency and an emulator restart, duplicating nothing',
    { timeout: 120_000 },
    async () => {
      const ports = { imds: await closedPort(), control: await closedPort() };
      const state = join(dir, 'emulator-state.json');
      let emu = await startEmulator(['--state', state], ports);
      const marker = join(dir, 'faults-marker');
      const agent = await startAgent(
        join(dir, 'faults.yaml'),
        baseConfig(emu.imdsUrl, {
          journal: join(dir, 'faults-journal.json'),
          readyWithinSeconds: 1,
          rules: [
            {
              name: 'all',
              actions: [execAction('drain', 'record.mjs', marker, 'drain')],
              approval: 'after-actions',
              onComplete: [execAction('rejoin', 'record.mjs', marker, 'complete')],
              onCancel: [execAction('undo', 'record.mjs', marker, 'cancel')],
            },
          ],
        }),
      );
      try {
        for (const fault of [
          { status: 429, count: 3 },
          { status: 500, count: 3 },
          { status: 410, count: 3 },
          { drop: true, count: 2 },
          { latencyMs: 300, count: 3 },
        ]) {
          assert.equal((await api(emu, 'POST', '/v1/faults', fault)).status, 201, JSON.stringify(fault));
        }
        const first = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
        await waitForEvent(emu, first, 'the approval through the faults', (e) => e?.status === 'Started', 60_000);
        for (const status of ['429', '500', '410', 'network']) {
          assert.ok(
            (await metric(agent, 'forewarn_agent_imds_errors_total', `{status="${status}"}`)) >= 1,
            `IMDS errors counted for ${status}`,
          );
        }
        const held = await trigger(emu, {
          type: 'platform-reboot',
          vms: ['vm0'],
          notBefore: new Date(Date.now() + 3600_000).toISOString(),
        });
        await waitFor('the second drain', () => lines(marker).includes(`drain ${held} prepare`));

        // The emulator goes away and comes back from its state file.
        await emu.proc.stop();
        const notReady = await waitFor('/readyz to fail', async () => {
          const r = await fetch(`${agent.url}/readyz`);
          return r.status === 503 ? ((await r.json()) as { reason: string }) : undefined;
        });
        assert.match(notReady.reason, /last good read/);
        assert.equal(agent.proc.running, true);
        emu = await startEmulator(['--state', state], ports);
        await waitFor(
          '/readyz to pass again',
          async () => ((await fetch(`${agent.url}/readyz`)).status === 200 ? true : undefined),
          30_000,
        );
        await api(emu, 'POST', `/v1/events/${first}/complete`);
        await waitFor('onComplete', () => lines(marker).includes(`complete ${first} complete`));
        await delay(600);
        const all = lines(marker);
        assert.deepEqual(
          all.filter((l) => l.includes(first)),
          [`drain ${first} prepare`, `complete ${first} complete`],
        );
        assert.deepEqual(
          all.filter((l) => l.includes(held)),
          [`drain ${held} prepare`],
        );
        // The held event's approval may have met the emulator's restart and be waiting out its backoff
        // (up to 30 s): wait for it rather than for the clock, then check that nothing went twice.
        const approvals = () => metric(agent, 'forewarn_agent_approvals_sent_total', '{role="leader"}');
        await waitFor('both approvals sent', async () => ((await approvals()) >= 2 ? true : undefined), 45_000);
        assert.equal(await approvals(), 2);
        assert.equal(await agent.proc.stop(), 0);
      } finally {
        await emu.proc.stop();
      }
    },
  );
});

describe('agent e2e: bad inputs', () => {
  it('sets a corrupt journal aside with a warning and carries on', async () => {
    await reset();
    const journal = join(dir, 'corrupt-journal.json');
    writeFileSync(journal, '{"format": "forewarn-agent-journal", "entries": [tru');
    const marker = join(dir, 'corrupt-marker');
    const agent = await startAgent(
      join(dir, 'corrupt.yaml'),
      baseConfig(emu.imdsUrl, { journal, rules: [{ name: 'all', actions: [execAction('drain', 'record.mjs', marker, 'drain')] }] }),
    );
    const warning = agent.proc.logs().find((l) => l.level === 40 && /journal was unreadable/.test(String(l.msg)));
    assert.ok(warning, 'a warning about the journal');
    assert.ok(readdirSync(dir).some((f) => f.startsWith('corrupt-journal.json.corrupt-')));
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
    await waitForEvent(emu, id, 'the approval', (e) => e?.status === 'Started');
    assert.equal(await agent.proc.stop(), 0);
  });

  it('refuses a bad config with exit 2, listing every problem', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      [
        'pollIntervalSeconds: fast',
        'listen: nowhere',
        'rules:',
        '  - name: drain',
        '    approval: sometimes',
        '    actions:',
        '      - { type: exec, argv: "systemctl stop web" }',
        '    colour: blue',
        '',
      ].join('\n'),
    );
    const proc = new Proc(['agent', '--config', file]);
    assert.equal(await proc.exited, 2);
    const problems = proc.stderr.split('\n').filter((l) => l.includes(`${file}:`));
    assert.ok(problems.length >= 5, proc.stderr);
    for (const [line, what] of [
      [1, 'pollIntervalSeconds'],
      [2, 'listen'],
      [5, 'approval'],
      [7, 'argv'],
      [8, 'colour'],
    ] as const) {
      assert.ok(
        problems.some((p) => p.includes(`${file}:${line}:`) && p.includes(what)),
        `line ${line} (${what}) in:\n${proc.stderr}`,
      );
    }
    assert.doesNotMatch(proc.stderr, /^\s+at /m);
  });

  it('--dry-run logs what it would do and does nothing', async () => {
    await reset();
    const journal = join(dir, 'dry-journal.json');
    const marker = join(dir, 'dry-marker');
    const agent = await startAgent(
      join(dir, 'dry.yaml'),
      baseConfig(emu.imdsUrl, { journal, rules: [{ name: 'all', actions: [execAction('drain', 'record.mjs', marker, 'drain')] }] }),
      { args: ['--dry-run'] },
    );
    const id = await trigger(emu, { type: 'platform-reboot', vms: ['vm0'] });
    await agent.proc.waitForLog('would run', (l) => l.eventId === id && /would run/.test(String(l.msg)));
    await agent.proc.waitForLog('would approve', (l) => l.eventId === id && l.msg === 'dry run: would approve');
    await delay(500);
    assert.equal((await eventState(emu, id))!.status, 'Scheduled');
    assert.equal(existsSync(marker), false);
    assert.equal(await agent.proc.stop(), 0);
    assert.equal(existsSync(journal), false, 'no journal written');
  });
});
