// Turning successive documents into changes, keyed by EventId and decided by content, never by incarnation.
import type { ChangeKind, EventChange, EventsDocument, ScheduledEvent } from './types.js';

/** [seed] EventIds are GUIDs; producers differ in case, so ids compare case-insensitively. */
export function eventKey(id: string): string {
  return id.toLowerCase();
}

export function sameEventId(a: string, b: string): boolean {
  return eventKey(a) === eventKey(b);
}

function sameResources(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

/** The fields whose change is an `updated`; status is judged separately. */
export function sameContent(a: ScheduledEvent, b: ScheduledEvent): boolean {
  return (
    (a.notBefore?.getTime() ?? null) === (b.notBefore?.getTime() ?? null) &&
    a.durationInSeconds === b.durationInSeconds &&
    a.description === b.description &&
    sameResources(a.resources, b.resources) &&
    a.type === b.type &&
    a.source === b.source
  );
}

function byKey(events: readonly ScheduledEvent[]): Map<string, ScheduledEvent> {
  const map = new Map<string, ScheduledEvent>();
  // A repeated id in one document: the first one counts.
  for (const e of events) if (!map.has(eventKey(e.id))) map.set(eventKey(e.id), e);
  return map;
}

/** What a change to `next` from `before` is, if any. Scheduled → Started wins over field changes. */
function transition(before: ScheduledEvent, next: ScheduledEvent): ChangeKind | null {
  if (next.status === 'Started' && before.status !== 'Started') return 'started';
  if (next.status !== before.status || !sameContent(before, next)) return 'updated';
  return null;
}

/**
 * The changes from `previous` (null: nothing seen yet, so every event is new) to `next`.
 *
 * Order, so a consumer handles one document's events together and predictably:
 * 1. removals (`completed` if it had Started, else `cancelled`), in the previous document's order;
 * 2. additions (`started` if it arrives Started, else `scheduled`), in the new document's order;
 * 3. transitions (`started` for Scheduled → Started, `updated` for any other change of status,
 *    NotBefore, DurationInSeconds, Description, Resources, EventType or EventSource), in the new
 *    document's order.
 * Each event gets at most one change per call. Incarnations are not compared: a restarted
 * service whose incarnation went backwards but shows the same events yields nothing.
 */
export function diffDocuments(previous: readonly ScheduledEvent[] | null, next: EventsDocument): EventChange[] {
  const before = byKey(previous ?? []);
  const after = byKey(next.events);
  const incarnation = next.incarnation;
  const removals: EventChange[] = [];
  const additions: EventChange[] = [];
  const transitions: EventChange[] = [];
  for (const [key, old] of before) {
    if (after.has(key)) continue;
    removals.push({ kind: old.status === 'Started' ? 'completed' : 'cancelled', event: old, previous: old, incarnation });
  }
  for (const [key, event] of after) {
    const old = before.get(key);
    if (old === undefined) {
      additions.push({ kind: event.status === 'Started' ? 'started' : 'scheduled', event, previous: null, incarnation });
      continue;
    }
    const kind = transition(old, event);
    if (kind !== null) transitions.push({ kind, event, previous: old, incarnation });
  }
  return [...removals, ...additions, ...transitions];
}

/** Ids remembered after they leave a document, so one that comes back is not announced again. */
const REMEMBERED_ENDED = 1024;

/**
 * diffDocuments with memory: an event that leaves a document and later returns (a flapping or
 * restarted service) is compared with how it was last seen instead of being announced as
 * `scheduled` a second time. Each departure still gets exactly one `completed` or `cancelled`.
 */
export class EventTracker {
  #current: ScheduledEvent[] | null = null;
  readonly #ended = new Map<string, ScheduledEvent>();

  /** The events of the last document applied, or null before the first. */
  get events(): readonly ScheduledEvent[] | null {
    return this.#current;
  }

  apply(doc: EventsDocument): EventChange[] {
    const removals: EventChange[] = [];
    const additions: EventChange[] = [];
    const transitions: EventChange[] = [];
    for (const change of diffDocuments(this.#current, doc)) {
      const key = eventKey(change.event.id);
      if (change.kind === 'completed' || change.kind === 'cancelled') {
        this.#remember(key, change.event);
        removals.push(change);
      } else if (change.previous !== null) {
        transitions.push(change);
      } else {
        const ended = this.#ended.get(key);
        if (ended === undefined) {
          additions.push(change);
          continue;
        }
        this.#ended.delete(key);
        const kind = transition(ended, change.event);
        if (kind !== null) transitions.push({ ...change, kind, previous: ended });
      }
    }
    // A returning event joins the transitions: keep those in document order.
    const position = new Map<string, number>();
    doc.events.forEach((e, i) => {
      if (!position.has(eventKey(e.id))) position.set(eventKey(e.id), i);
    });
    transitions.sort((a, b) => (position.get(eventKey(a.event.id)) ?? 0) - (position.get(eventKey(b.event.id)) ?? 0));
    this.#current = doc.events;
    return [...removals, ...additions, ...transitions];
  }

  #remember(key: string, event: ScheduledEvent): void {
    this.#ended.delete(key);
    this.#ended.set(key, event);
    if (this.#ended.size > REMEMBERED_ENDED) this.#ended.delete(this.#ended.keys().next().value as string);
  }
}
