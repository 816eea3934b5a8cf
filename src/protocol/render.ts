// Turns version-independent events into the wire document a given api-version shows.
import type { EventView, ScheduledEvent, ScheduledEventsDocument } from './types.js';
import { featuresOf, type ApiVersion } from './versions.js';
import { formatRfc1123 } from './time.js';

export function renderDocument(
  incarnation: number,
  events: readonly EventView[],
  version: ApiVersion,
): ScheduledEventsDocument {
  const f = featuresOf(version);
  const out: ScheduledEvent[] = [];
  for (const e of events) {
    if (!f.eventTypes.has(e.type)) continue;
    // Built in wire order: the literal's key order is the JSON key order.
    const wire: ScheduledEvent = {
      EventId: e.id,
      EventStatus: e.status,
      EventType: e.type,
      ResourceType: 'VirtualMachine',
      Resources: e.resources.map((r) => (f.underscorePrefix ? `_${r}` : r)),
      NotBefore: e.notBefore === null ? '' : formatRfc1123(e.notBefore),
    };
    if (f.description) wire.Description = e.description;
    if (f.eventSource) wire.EventSource = e.source;
    if (f.durationInSeconds) wire.DurationInSeconds = e.durationInSeconds;
    out.push(wire);
  }
  return { DocumentIncarnation: incarnation, Events: out };
}

export function serializeDocument(doc: ScheduledEventsDocument): string {
  return JSON.stringify(doc);
}
