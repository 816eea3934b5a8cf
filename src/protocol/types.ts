// The Scheduled Events wire contract: what IMDS sends and accepts.

export const EVENT_TYPES = ['Freeze', 'Reboot', 'Redeploy', 'Preempt', 'Terminate'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EVENT_STATUSES = ['Scheduled', 'Started'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const EVENT_SOURCES = ['Platform', 'User'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/** The only resource type Scheduled Events ever reports. */
export type ResourceType = 'VirtualMachine';

/** One event as it appears in the newest api-version; older versions drop fields (see versions.ts). */
export interface ScheduledEvent {
  EventId: string;
  EventStatus: EventStatus;
  EventType: EventType;
  ResourceType: ResourceType;
  Resources: string[];
  /** RFC 1123 (`Mon, 19 Sep 2016 18:29:47 GMT`), or `""` once Started. */
  NotBefore: string;
  Description?: string;
  EventSource?: EventSource;
  DurationInSeconds?: number;
}

export interface ScheduledEventsDocument {
  DocumentIncarnation: number;
  Events: ScheduledEvent[];
}

/** Body of the approval POST. */
export interface StartRequestsBody {
  StartRequests: { EventId: string }[];
}

/**
 * An event as the emulator knows it, independent of api-version.
 * `notBefore` is epoch milliseconds, or null once Started.
 */
export interface EventView {
  id: string;
  status: EventStatus;
  type: EventType;
  resources: readonly string[];
  notBefore: number | null;
  description: string;
  source: EventSource;
  durationInSeconds: number;
}
