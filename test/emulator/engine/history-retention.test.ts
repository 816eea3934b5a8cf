// Bounded history: ended events, finished operations and deleted VMs are kept up to historyLimit,
// oldest out first, and read a page at a time, newest first, by cursors that stay put.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEmulatorOptions } from '../../../src/cli/emulator.js';
import { UsageError } from '../../../src/cli/errors.js';
import { Emulator } from '../../../src/emulator/emulator.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { DEFAULT_HISTORY_LIMIT, Engine, type EngineSnapshot } from '../../../src/emulator/engine/engine.js';
import { EngineError } from '../../../src/emulator/engine/errors.js';
import type { VmSpec } from '../../../src/emulator/engine/fleet.js';
import { MAX_PAGE_LIMIT } from '../../../src/emulator/engine/paging.js';
import { FLEET, MINUTE, T0 } from './fixtures.js';

// Ids unique across engines, so one restored from another's state issues no id twice.
let n = 0;

function make(options: { historyLimit?: number; fleet?: VmSpec[] } = {}) {
  const clock = new ManualClock(T0);
  const newId = () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
  const engine = new Engine({ clock, fleet: options.fleet ?? FLEET, newId, ...options });
  const advance = (ms: number) => {
    clock.advance(ms);
    engine.tick();
  };
  return { clock, engine, advance };
}

/** One create/cancel cycle: a freeze of one VM, cancelled at once. Returns the event id. */
function churn(engine: Engine, vm = 'web0'): string {
  const id = engine.createOperation({ type: 'freeze', vms: [vm] }).events[0]!;
  engine.cancel(id);
  return id;
}

/** Every page of history, newest first, following `next`. */
function allHistoryIds(engine: Engine, limit = MAX_PAGE_LIMIT): string[] {
  const ids: string[] = [];
  let before: string | undefined;
  do {
    const page = engine.history({ limit, ...(before === undefined ? {} : { before }) });
    ids.push(...page.items.map((e) => e.id));
    before = page.next ?? undefined;
  } while (before !== undefined);
  return ids;
}

function assertInvalid(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof EngineError, String(err));
    assert.equal(err.code, 'invalid');
    assert.match(err.message, pattern);
    return true;
  });
}

describe('history retention', () => {
  test('5,000 create/cancel cycles leave at most the default limit of ended events and operations', () => {
    const { engine } = make();
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) ids.push(churn(engine));
    const snapshot = engine.snapshot();
    assert.equal(snapshot.ended.length, DEFAULT_HISTORY_LIMIT, 'ended events in the snapshot');
    assert.equal(snapshot.operations.length, DEFAULT_HISTORY_LIMIT, 'finished operations in the snapshot');
    const kept = allHistoryIds(engine);
    assert.equal(kept.length, DEFAULT_HISTORY_LIMIT);
    // The newest are kept, newest first.
    assert.deepEqual(kept, ids.slice(-DEFAULT_HISTORY_LIMIT).reverse());
    assert.equal(engine.operations({ limit: MAX_PAGE_LIMIT }).next, null);
    assert.equal(engine.operations({ limit: MAX_PAGE_LIMIT }).items.length, DEFAULT_HISTORY_LIMIT);
  });

  test('the oldest ended event goes first; a late approval of it is refused as unknown', () => {
    const { engine } = make({ historyLimit: 3 });
    const ids = [churn(engine), churn(engine), churn(engine)];
    assert.deepEqual(allHistoryIds(engine), [...ids].reverse());
    // Still remembered: a late approval is accepted and changes nothing.
    engine.approve('web0', [ids[0]!]);
    ids.push(churn(engine));
    assert.deepEqual(allHistoryIds(engine), ids.slice(1).reverse());
    assert.equal(engine.hasEnded(ids[0]!), false);
    assertInvalid(
      () => engine.approve('web0', [ids[0]!]),
      new RegExp(`^unknown EventId \\(never issued, or ended longer ago than the emulator keeps: --history-limit\\): ${ids[0]}$`),
    );
    engine.approve('web0', [ids[1]!]);
  });

  test('0 keeps no ended event, finished operation or deleted VM', () => {
    const { engine, advance } = make({ historyLimit: 0 });
    const id = churn(engine);
    assert.deepEqual(engine.history().items, []);
    assert.deepEqual(engine.operations().items, []);
    assertInvalid(() => engine.approve('web0', [id]), /^unknown EventId/);
    // A delete with terminate notification: the VM goes when its event ends; no record of it is kept.
    const del = engine.createOperation({ type: 'delete', vms: ['ss0'] });
    advance(10 * MINUTE);
    engine.complete(del.events[0]!);
    assert.equal(engine.fleet.vms.has('ss0'), false);
    assert.deepEqual(engine.deletedVms(), []);
    const snapshot = engine.snapshot();
    assert.deepEqual([snapshot.ended, snapshot.operations, snapshot.deleted], [[], [], []]);
  });

  test("an operation's outcome is read from all its events, however many ended since its first", () => {
    const fleet: VmSpec[] = [...FLEET, { name: 'db0', tenant: 'db', tenantKind: 'availabilitySet', host: 'h1' }];
    const { engine } = make({ historyLimit: 1, fleet });
    // A restart of VMs in two tenants: one operation, two jobs, cancelled one after the other.
    const two = engine.createOperation({ type: 'restart', vms: ['web0', 'solo'] });
    engine.cancel(two.events[0]!);
    // Other events end meanwhile; the first one, cancelled, stays while its operation runs.
    churn(engine);
    churn(engine);
    assert.equal(engine.operation(two.id).status, 'running');
    engine.cancel(two.events[1]!);
    assert.equal(engine.operation(two.id).status, 'cancelled', 'every event cancelled: cancelled');
    // Now finished, it is held to the limit like the rest.
    assert.deepEqual(
      engine.history({ limit: MAX_PAGE_LIMIT }).items.map((e) => e.id),
      [two.events[1]],
    );
    // A job of two tenants on one host, cancelled: both its events end in one go.
    const shared = engine.createOperation({ type: 'freeze', host: 'h1' });
    assert.equal(shared.events.length, 2, 'web0 and db0 share host h1');
    engine.cancel(shared.events[1]!);
    assert.equal(engine.operation(shared.id).status, 'cancelled');
  });

  test('running operations are never dropped; finished ones go oldest first', () => {
    const { engine } = make({ historyLimit: 2 });
    const running = engine.createOperation({ type: 'restart', vms: ['ss1'] });
    const finished: string[] = [];
    for (let i = 0; i < 4; i++) {
      const op = engine.createOperation({ type: 'freeze', vms: ['web1'] });
      engine.cancel(op.events[0]!);
      finished.push(op.id);
    }
    const all = engine.operations({ limit: MAX_PAGE_LIMIT }).items.map((o) => o.id);
    assert.deepEqual(all, [finished[3], finished[2], running.id]);
    assert.deepEqual(
      engine.operations({ status: 'running' }).items.map((o) => o.id),
      [running.id],
    );
  });

  test('deleted VMs are kept up to the limit, oldest deletion out first', () => {
    const fleet: VmSpec[] = ['a', 'b', 'c', 'd'].map((name) => ({ name, tenant: 'ss', tenantKind: 'scaleSet' as const }));
    const { engine } = make({ historyLimit: 2, fleet });
    for (const name of ['a', 'b', 'c']) engine.createOperation({ type: 'delete', vms: [name] });
    assert.deepEqual(
      engine.deletedVms().map((d) => d.name),
      ['b', 'c'],
    );
    assert.equal(engine.snapshot().deleted!.length, 2);
  });

  test('the limit must be an integer of 0 or more', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assertInvalid(() => make({ historyLimit: bad }), /historyLimit must be an integer of 0 or more/);
    }
  });
});

describe('history and operations, page by page', () => {
  test('newest first; next is null at the end; pages stay put while new events end', () => {
    const { engine } = make();
    const ids = Array.from({ length: 5 }, () => churn(engine));
    const first = engine.history({ limit: 2 });
    assert.deepEqual(
      first.items.map((e) => e.id),
      [ids[4], ids[3]],
    );
    assert.ok(first.next !== null);
    // Two more end meanwhile: the next page carries on where the first stopped.
    const newer = [churn(engine), churn(engine)];
    const second = engine.history({ limit: 2, before: first.next });
    assert.deepEqual(
      second.items.map((e) => e.id),
      [ids[2], ids[1]],
    );
    const third = engine.history({ limit: 2, before: second.next! });
    assert.deepEqual(
      third.items.map((e) => e.id),
      [ids[0]],
    );
    assert.equal(third.next, null);
    // A page that ends exactly at the oldest has no next either.
    assert.equal(engine.history({ limit: 7 }).next, null);
    assert.deepEqual(
      engine.history({ limit: 2 }).items.map((e) => e.id),
      [...newer].reverse(),
    );
    // The default page is 100.
    assert.equal(engine.history().items.length, 7);
  });

  test('operations filter by status and page like history', () => {
    const { engine } = make();
    const done = engine.createOperation({ type: 'freeze', vms: ['web0'] });
    engine.cancel(done.events[0]!);
    const run1 = engine.createOperation({ type: 'freeze', vms: ['web1'] });
    const run2 = engine.createOperation({ type: 'freeze', vms: ['web2'] });
    const page = engine.operations({ status: 'running', limit: 1 });
    assert.deepEqual(
      page.items.map((o) => o.id),
      [run2.id],
    );
    const rest = engine.operations({ status: 'running', limit: 1, before: page.next! });
    assert.deepEqual(
      rest.items.map((o) => o.id),
      [run1.id],
    );
    assert.equal(rest.next, null);
    assert.deepEqual(
      engine.operations({ status: 'cancelled' }).items.map((o) => o.id),
      [done.id],
    );
    assert.deepEqual(engine.operations({ status: 'completed' }).items, []);
    // Copies: changing one changes nothing in the engine.
    page.items[0]!.vms.push('x');
    assert.deepEqual(engine.operation(run2.id).vms, ['web2']);
  });

  test('limits and cursors are checked, naming the parameter', () => {
    const { engine } = make();
    for (const limit of [0, -1, 1.5, MAX_PAGE_LIMIT + 1]) {
      assertInvalid(() => engine.history({ limit }), /^limit: must be an integer from 1 to 1000/);
      assertInvalid(() => engine.operations({ limit }), /^limit: must be an integer from 1 to 1000/);
    }
    for (const before of ['', 'abc', '-1', '1.5', '1e3', '99999999999999999999']) {
      assertInvalid(() => engine.history({ before }), /^before: /);
      assertInvalid(() => engine.operations({ before }), /^before: /);
    }
    assertInvalid(() => engine.operations({ status: 'done' as never }), /^status: must be one of running, completed, cancelled/);
    assert.equal(engine.history({ limit: MAX_PAGE_LIMIT }).next, null);
  });
});

describe('sequence numbers in the state', () => {
  test('a restored engine carries on numbering, and cursors taken before still work', () => {
    const a = make();
    const ids = Array.from({ length: 4 }, () => churn(a.engine));
    const cursor = a.engine.history({ limit: 2 }).next!;
    const snapshot = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    const b = make();
    b.engine.restore(snapshot);
    assert.deepEqual(
      b.engine.history({ before: cursor }).items.map((e) => e.id),
      [ids[1], ids[0]],
    );
    const later = churn(b.engine);
    assert.deepEqual(allHistoryIds(b.engine, 1), [later, ...[...ids].reverse()]);
    const ops = b.engine.operations().items;
    assert.equal(ops.length, 5);
    assert.ok(
      ops.every((o, i) => i === 0 || o.seq < ops[i - 1]!.seq),
      'operations newest first',
    );
  });

  test('a state file without sequence numbers loads in the order it was saved', () => {
    const a = make();
    const ids = Array.from({ length: 3 }, () => churn(a.engine));
    const old = JSON.parse(JSON.stringify(a.engine.snapshot())) as EngineSnapshot;
    for (const e of old.ended) delete e.seq;
    for (const o of old.operations) delete o.seq;
    const b = make();
    b.engine.restore(old);
    assert.deepEqual(allHistoryIds(b.engine, 1), [...ids].reverse());
    const later = churn(b.engine);
    assert.equal(b.engine.history({ limit: 1 }).items[0]!.id, later);
  });

  test('a state file with more than the limit is cut down to it on restore', () => {
    const a = make();
    const ids = Array.from({ length: 6 }, () => churn(a.engine));
    const b = make({ historyLimit: 2 });
    b.engine.restore(a.engine.snapshot());
    assert.deepEqual(allHistoryIds(b.engine), [ids[5], ids[4]]);
    assert.equal(b.engine.snapshot().ended.length, 2);
    assert.equal(b.engine.snapshot().operations.length, 2);
  });
});

describe('--history-limit', () => {
  test('forewarn emulator takes a whole number of 0 or more, else exits 2 naming the flag', () => {
    assert.equal(parseEmulatorOptions({}).historyLimit, undefined, 'absent: the engine default');
    assert.equal(parseEmulatorOptions({ historyLimit: '0' }).historyLimit, 0);
    assert.equal(parseEmulatorOptions({ historyLimit: '25' }).historyLimit, 25);
    for (const bad of ['', '-1', '1.5', 'many', '1e3', '99999999999999999999']) {
      assert.throws(
        () => parseEmulatorOptions({ historyLimit: bad }),
        (err: unknown) =>
          err instanceof UsageError &&
          err.message === `--history-limit must be a whole number of ended events to keep, 0 or more (0 keeps none), got "${bad}"`,
        bad,
      );
    }
  });

  test('the emulator hands it to its engine', async () => {
    const emulator = await Emulator.create({ clock: 'manual', historyLimit: 1, logger: false });
    try {
      const ids = [churn(emulator.engine, 'vm0'), churn(emulator.engine, 'vm0')];
      assert.deepEqual(allHistoryIds(emulator.engine), [ids[1]]);
    } finally {
      await emulator.close();
    }
  });
});
