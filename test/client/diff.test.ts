import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  EventTracker,
  diffDocuments,
  eventKey,
  type EventChange,
  type EventsDocument,
  type ScheduledEvent,
} from '../../src/client/index.js';
import { scheduledEvent } from '../support/fixtures.js';

const NB = new Date('2030-01-01T00:15:00Z');

/** A Freeze of vm0. */
const ev = (id: string, over: Partial<ScheduledEvent> = {}): ScheduledEvent =>
  scheduledEvent({ id, type: 'Freeze', resources: ['vm0'], notBefore: NB, description: 'd', durationInSeconds: 5, ...over });

const started = (id: string, over: Partial<ScheduledEvent> = {}): ScheduledEvent => ev(id, { status: 'Started', notBefore: null, ...over });

function doc(incarnation: number, events: ScheduledEvent[]): EventsDocument {
  return { incarnation, events, etag: null };
}

/** `kind:id` for each change, the shape the table compares. */
function summary(changes: readonly EventChange[]): string[] {
  return changes.map((c) => `${c.kind}:${c.event.id}`);
}

describe('diffDocuments', () => {
  const cases: { name: string; prev: ScheduledEvent[] | null; next: ScheduledEvent[]; want: string[] }[] = [
    { name: 'first document: Scheduled is new', prev: null, next: [ev('A')], want: ['scheduled:A'] },
    { name: 'first document: already Started (hardware failure)', prev: null, next: [started('A')], want: ['started:A'] },
    { name: 'first document, empty', prev: null, next: [], want: [] },
    { name: 'nothing changed', prev: [ev('A')], next: [ev('A')], want: [] },
    { name: 'Scheduled → Started', prev: [ev('A')], next: [started('A')], want: ['started:A'] },
    { name: 'Started and gone: completed', prev: [started('A')], next: [], want: ['completed:A'] },
    { name: 'Scheduled and gone: cancelled', prev: [ev('A')], next: [], want: ['cancelled:A'] },
    {
      name: 'NotBefore moved: updated',
      prev: [ev('A')],
      next: [ev('A', { notBefore: new Date(NB.getTime() + 60_000) })],
      want: ['updated:A'],
    },
    { name: 'Duration changed', prev: [ev('A')], next: [ev('A', { durationInSeconds: 9 })], want: ['updated:A'] },
    { name: 'Description changed', prev: [ev('A')], next: [ev('A', { description: '' })], want: ['updated:A'] },
    { name: 'Resources changed', prev: [ev('A')], next: [ev('A', { resources: ['vm0', 'vm1'] })], want: ['updated:A'] },
    { name: 'EventType changed', prev: [ev('A')], next: [ev('A', { type: 'Reboot' })], want: ['updated:A'] },
    { name: 'EventSource changed', prev: [ev('A')], next: [ev('A', { source: null })], want: ['updated:A'] },
    { name: 'Started → Scheduled is an update', prev: [started('A')], next: [ev('A')], want: ['updated:A'] },
    { name: 'raw-only difference is no change', prev: [ev('A')], next: [ev('A', { raw: { x: 1 } })], want: [] },
    { name: 'id case differs: same event', prev: [ev('abc')], next: [ev('ABC')], want: [] },
    { name: 'id case differs and it started', prev: [ev('abc')], next: [started('ABC')], want: ['started:ABC'] },
    {
      name: 'removals, then additions, then transitions, each in document order',
      prev: [ev('A'), started('B'), ev('C'), ev('D')],
      next: [started('D'), ev('F'), ev('C', { description: 'x' }), started('E')],
      want: ['cancelled:A', 'completed:B', 'scheduled:F', 'started:E', 'started:D', 'updated:C'],
    },
    { name: 'two new events together, in order', prev: [], next: [ev('B'), ev('A')], want: ['scheduled:B', 'scheduled:A'] },
    { name: 'a repeated id in one document counts once', prev: null, next: [ev('A'), ev('a')], want: ['scheduled:A'] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(summary(diffDocuments(c.prev, doc(9, c.next))), c.want);
    });
  }

  it('carries the incarnation, the event and what it was before', () => {
    const before = ev('A');
    const after = started('A');
    const [change] = diffDocuments([before], doc(42, [after]));
    assert.deepEqual(change, { kind: 'started', event: after, previous: before, incarnation: 42 });
    const [gone] = diffDocuments([after], doc(43, []));
    assert.equal(gone?.event, after);
    assert.equal(gone?.previous, after);
    assert.equal(gone?.incarnation, 43);
    const [fresh] = diffDocuments(null, doc(1, [before]));
    assert.equal(fresh?.previous, null);
  });

  it('ignores the incarnation: a lower one with the same events is no change', () => {
    assert.deepEqual(diffDocuments([ev('A')], doc(1, [ev('A')])), []);
  });
});

describe('EventTracker', () => {
  it('does not announce an event again when it comes back after leaving', () => {
    const t = new EventTracker();
    assert.deepEqual(summary(t.apply(doc(5, [ev('A')]))), ['scheduled:A']);
    assert.deepEqual(summary(t.apply(doc(1, []))), ['cancelled:A']);
    assert.deepEqual(summary(t.apply(doc(2, [ev('a')]))), []);
    assert.deepEqual(summary(t.apply(doc(3, [started('A')]))), ['started:A']);
    assert.deepEqual(summary(t.apply(doc(4, []))), ['completed:A']);
  });

  it('compares a returning event with its last version', () => {
    const t = new EventTracker();
    t.apply(doc(1, [ev('A')]));
    t.apply(doc(2, []));
    const changes = t.apply(doc(3, [ev('X'), started('A')]));
    assert.deepEqual(summary(changes), ['scheduled:X', 'started:A']);
    assert.equal(changes[1]?.previous?.status, 'Scheduled');
  });

  it('exposes the last events applied', () => {
    const t = new EventTracker();
    const before = t.events;
    assert.equal(before, null);
    t.apply(doc(1, [ev('A')]));
    assert.equal(t.events?.length, 1);
  });
});

/** Random, realistic histories: each id lives for one stretch, Scheduled then perhaps Started. */
const history = fc
  .record({
    steps: fc.integer({ min: 1, max: 8 }),
    lives: fc.array(fc.record({ id: fc.uuid(), start: fc.nat(7), length: fc.integer({ min: 1, max: 8 }), startsAfter: fc.nat(8) }), {
      minLength: 1,
      maxLength: 6,
    }),
    variants: fc.array(
      fc.record({
        upper: fc.boolean(),
        incarnation: fc.integer({ min: 0, max: 20 }),
        reverse: fc.boolean(),
        desc: fc.constantFrom('a', 'b'),
      }),
      { minLength: 8, maxLength: 8 },
    ),
  })
  .map(({ steps, lives, variants }) => {
    const unique = lives.filter((l, i) => lives.findIndex((m) => eventKey(m.id) === eventKey(l.id)) === i);
    return Array.from({ length: steps }, (_, i) => {
      const v = variants[i]!;
      const events = unique
        .filter((l) => l.start <= i && i < l.start + l.length)
        .map((l) => {
          const id = v.upper ? l.id.toUpperCase() : l.id;
          return i >= l.start + l.startsAfter ? started(id, { description: v.desc }) : ev(id, { description: v.desc });
        });
      return doc(v.incarnation, v.reverse ? events.reverse() : events);
    });
  });

describe('diffDocuments: properties', () => {
  it('announces each event once as scheduled, and ends each departed one exactly once, matching its last status', () => {
    fc.assert(
      fc.property(history, (docs) => {
        const scheduled = new Map<string, number>();
        const announced = new Set<string>();
        const ends = new Map<string, string[]>();
        let previous: ScheduledEvent[] | null = null;
        for (const d of docs) {
          for (const c of diffDocuments(previous, d)) {
            const key = eventKey(c.event.id);
            if (c.kind === 'scheduled') scheduled.set(key, (scheduled.get(key) ?? 0) + 1);
            if (c.previous === null) announced.add(key);
            if (c.kind === 'completed' || c.kind === 'cancelled') ends.set(key, [...(ends.get(key) ?? []), c.kind]);
          }
          previous = d.events;
        }
        for (const count of scheduled.values()) assert.equal(count, 1);
        const seen = new Map<string, ScheduledEvent>();
        for (const d of docs) for (const e of d.events) seen.set(eventKey(e.id), e);
        const last = new Set(docs.at(-1)!.events.map((e) => eventKey(e.id)));
        for (const [key, lastSeen] of seen) {
          assert.ok(announced.has(key), 'every event is announced');
          if (last.has(key)) assert.equal(ends.get(key), undefined);
          else assert.deepEqual(ends.get(key), [lastSeen.status === 'Started' ? 'completed' : 'cancelled']);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('EventTracker: properties', () => {
  // Ids may vanish and return here, as with a flapping or restarted service.
  const flapping = fc
    .record({
      ids: fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 4 }),
      frames: fc.array(fc.array(fc.record({ present: fc.boolean(), started: fc.boolean() }), { minLength: 4, maxLength: 4 }), {
        minLength: 1,
        maxLength: 10,
      }),
    })
    .map(({ ids, frames }) =>
      frames.map((frame, i) =>
        doc(
          i,
          ids.flatMap((id, j) => (frame[j]!.present ? [frame[j]!.started ? started(id) : ev(id)] : [])),
        ),
      ),
    );

  it('never announces an id as scheduled twice, and gives each departure exactly one completed/cancelled', () => {
    fc.assert(
      fc.property(flapping, (docs) => {
        const tracker = new EventTracker();
        const scheduled = new Set<string>();
        let present = new Set<string>();
        for (const d of docs) {
          const changes = tracker.apply(d);
          const now = new Set(d.events.map((e) => eventKey(e.id)));
          const departures = [...present].filter((k) => !now.has(k));
          const ends = changes.filter((c) => c.kind === 'completed' || c.kind === 'cancelled').map((c) => eventKey(c.event.id));
          assert.deepEqual(ends.sort(), departures.sort());
          for (const c of changes.filter((c) => c.kind === 'scheduled')) {
            const key = eventKey(c.event.id);
            assert.ok(!scheduled.has(key), `${key} scheduled twice`);
            scheduled.add(key);
          }
          present = now;
        }
      }),
      { numRuns: 300 },
    );
  });
});
