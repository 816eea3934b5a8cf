// Lenient reading of real-world documents: old api-versions omit fields, producers vary case and types.
import { parseEventTime } from '../protocol/time.js';
import { ImdsProtocolError } from './errors.js';
import type { ComputeInfo, EventsDocument, ScheduledEvent } from './types.js';

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The exact key first, then any casing of it: some producers send `eventId` or `EVENTS`. */
function field(obj: Obj, key: string): unknown {
  if (Object.hasOwn(obj, key)) return obj[key];
  const lower = key.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

function text(body: unknown): string {
  try {
    return JSON.stringify(body) ?? String(body);
  } catch {
    return String(body);
  }
}

/** A number, or a string holding one (e.g. `"7"`); otherwise undefined. */
function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

function str(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v : fallback;
}

/** RFC 1123 or ISO; an unreadable time becomes null rather than losing the whole document ([choice]). */
function toDate(v: unknown): Date | null {
  if (typeof v !== 'string') return null;
  try {
    const ms = parseEventTime(v);
    return ms === null ? null : new Date(ms);
  } catch {
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? null : new Date(ms);
  }
}

function toResources(v: unknown): string[] {
  if (typeof v === 'string') return v === '' ? [] : [v];
  if (!Array.isArray(v)) return [];
  return v.filter((r): r is string => typeof r === 'string' && r !== '');
}

/**
 * Reads one event object as IMDS sends it (an item of `Events`), with the document's leniency. The
 * controller reads Event Grid's `data.resourceInfo.properties` through it: the same fields, so one conversion.
 */
export function parseScheduledEvent(e: unknown, index = 0, body: unknown = e): ScheduledEvent {
  if (!isObject(e)) throw new ImdsProtocolError(`Events[${index}] is not an object`, text(body));
  const id = field(e, 'EventId');
  if (typeof id !== 'string' || id.trim() === '') {
    throw new ImdsProtocolError(`Events[${index}] has no EventId`, text(body));
  }
  const source = field(e, 'EventSource');
  return {
    id,
    // Unknown statuses and types are kept: a future one must reach the caller, not vanish.
    status: str(field(e, 'EventStatus'), 'Scheduled'),
    type: str(field(e, 'EventType'), ''),
    resourceType: str(field(e, 'ResourceType'), 'VirtualMachine'),
    resources: toResources(field(e, 'Resources')),
    notBefore: toDate(field(e, 'NotBefore')),
    description: str(field(e, 'Description'), ''),
    // [seed] Some operations leave EventSource blank: '' reads as "not given".
    source: typeof source === 'string' && source !== '' ? source : null,
    durationInSeconds: toNumber(field(e, 'DurationInSeconds')) ?? -1,
    raw: { ...e },
  };
}

/**
 * Reads a Scheduled Events document. Lenient about what real documents vary in: absent fields
 * get defaults (Description '', EventSource null, DurationInSeconds -1, Resources []), a numeric
 * string DocumentIncarnation is read as a number, unknown EventTypes and statuses are kept, and
 * EventId case is preserved. Throws ImdsProtocolError only when the document cannot be used:
 * not an object with an Events array, an event without an EventId, or an unreadable incarnation.
 */
export function parseEventsDocument(json: unknown, etag: string | null = null): EventsDocument {
  if (!isObject(json)) throw new ImdsProtocolError('the document is not a JSON object', text(json));
  const events = field(json, 'Events');
  if (!Array.isArray(events)) throw new ImdsProtocolError('the document has no Events array', text(json));
  const rawIncarnation = field(json, 'DocumentIncarnation');
  let incarnation = 0;
  if (rawIncarnation !== undefined && rawIncarnation !== null) {
    const n = toNumber(rawIncarnation);
    if (n === undefined) {
      throw new ImdsProtocolError(`DocumentIncarnation ${text(rawIncarnation)} is not a number`, text(json));
    }
    incarnation = n;
  }
  return { incarnation, events: events.map((e, i) => parseScheduledEvent(e, i, json)), etag };
}

/** Reads `/metadata/instance/compute`; IMDS sends the domains as strings. */
/** osProfile.computerName, or '' when the answer has none. */
function computerNameOf(osProfile: unknown): string {
  return isObject(osProfile) ? str(field(osProfile, 'computerName'), '') : '';
}

export function parseCompute(json: unknown): ComputeInfo {
  if (!isObject(json)) throw new ImdsProtocolError('the compute metadata is not a JSON object', text(json));
  const name = field(json, 'name');
  if (typeof name !== 'string' || name === '') {
    throw new ImdsProtocolError('the compute metadata has no name', text(json));
  }
  return {
    name,
    vmId: str(field(json, 'vmId'), ''),
    vmScaleSetName: str(field(json, 'vmScaleSetName'), ''),
    computerName: computerNameOf(field(json, 'osProfile')),
    platformFaultDomain: toNumber(field(json, 'platformFaultDomain')) ?? 0,
    platformUpdateDomain: toNumber(field(json, 'platformUpdateDomain')) ?? 0,
    priority: str(field(json, 'priority'), ''),
    raw: { ...json },
  };
}
