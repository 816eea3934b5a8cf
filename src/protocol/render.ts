// Turns version-independent events into the wire document a given api-version shows.
import type { EventView, ScheduledEvent, ScheduledEventsDocument } from './types.js';
import { featuresOf, type ApiVersion } from './versions.js';
import { formatRfc1123 } from './time.js';

/** Never a role instance: for callers that know of no cloud services. */
const IAAS_ONLY = (): boolean => false;

/**
 * `roleInstance` says which resource names are cloud-service role instances: [seed] the
 * 2017-03-01 leading underscore is on IaaS VM names only ("Removed prepended underscore from
 * resource names for IaaS VMs", 2017-08-01 notes), so role instances are named as they are.
 */
export function renderDocument(
  incarnation: number,
  events: readonly EventView[],
  version: ApiVersion,
  roleInstance: (resource: string) => boolean = IAAS_ONLY,
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
      Resources: f.underscorePrefix ? e.resources.map((r) => (roleInstance(r) ? r : `_${r}`)) : [...e.resources],
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
