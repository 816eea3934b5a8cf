// A recording played back: which document shows at a position (ms into the recording), what an
// approval by the client under test does to the position, and where the client and the recording
// disagreed. Pure: the clock and HTTP are the callers'.
import { EARLIEST_TIME_MS, LATEST_TIME_MS, type RawDocument, type RawEvent, type Recording } from '../../protocol/recording.js';
import { formatRfc1123 } from '../../protocol/time.js';

/**
 * [choice] The recording was polled, so an event it shows Started this long (or more) before its
 * NotBefore was approved by someone; nearer than that, it may simply have started on time.
 */
export const APPROVAL_EVIDENCE_MS = 2_000;

export interface Divergence {
  eventId: string;
  /** `client-only`: the client approved what the recording did not; `recording-only`: the reverse. */
  kind: 'client-only' | 'recording-only';
  message: string;
}

export interface ReplayReport {
  changes: number;
  /** The change now showing (0-based). */
  at: number;
  finished: boolean;
  clientApprovals: string[];
  recordedApprovals: string[];
  divergences: Divergence[];
}

interface EventHistory {
  id: string;
  /** Index of the first change that shows it Started, or null. */
  startedAt: number | null;
  /** Index of the first change that shows it at all. */
  firstSeen: number;
  recordedApproval: boolean;
}

export class ReplayTimeline {
  readonly recording: Recording;
  readonly #recordingStart: number;
  readonly #events = new Map<string, EventHistory>();
  /** ms added to the position by approvals that made the replay jump ahead. */
  #skip = 0;
  readonly #clientApprovals = new Set<string>();

  constructor(recording: Recording) {
    if (recording.changes.length === 0) throw new Error('the recording holds no document to replay');
    this.recording = recording;
    this.#recordingStart = Date.parse(recording.header.startedAt);
    const approved = recordedApprovals(recording);
    recording.changes.forEach((change, i) => {
      for (const e of change.document.Events) {
        const id = e.EventId.toUpperCase();
        let history = this.#events.get(id);
        if (history === undefined)
          this.#events.set(id, (history = { id: e.EventId, startedAt: null, firstSeen: i, recordedApproval: false }));
        if (history.startedAt === null && e.EventStatus === 'Started') {
          history.startedAt = i;
          history.recordedApproval = approved(id, i);
        }
      }
    });
  }

  /** Length of the recording, ms from its first document to its last. */
  get durationMs(): number {
    return this.recording.changes.at(-1)!.at;
  }

  /** Where in the recording `elapsedMs` of replay (recording time, unscaled) has reached, approvals' jumps included. */
  position(elapsedMs: number): number {
    return elapsedMs + this.#skip;
  }

  /** Index of the change showing at a position. */
  indexAt(position: number): number {
    const changes = this.recording.changes;
    let lo = 0;
    let hi = changes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (changes[mid]!.at <= position) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * The document at a position, its NotBefore times moved into the replay's own time: `toReplayMs`
   * maps a recording time (epoch ms) to the replay's (epoch ms), so a client reads the time left
   * the recording showed.
   */
  documentAt(position: number, toReplayMs: (recordedMs: number) => number): RawDocument {
    const doc = this.recording.changes[this.indexAt(position)]!.document;
    return {
      DocumentIncarnation: doc.DocumentIncarnation,
      Events: doc.Events.map((e) => {
        const out: RawEvent = { ...e };
        const notBefore = typeof e.NotBefore === 'string' && e.NotBefore !== '' ? Date.parse(e.NotBefore) : Number.NaN;
        const moved = Number.isNaN(notBefore) ? Number.NaN : toReplayMs(notBefore);
        // [choice] A slow --timing can move a far NotBefore past what RFC 1123 shows: it is shown at the edge, never a 500.
        if (Number.isFinite(moved)) out.NotBefore = formatRfc1123(Math.min(Math.max(moved, EARLIEST_TIME_MS), LATEST_TIME_MS));
        return out;
      }),
    };
  }

  /** Maps a replay position to the recording's epoch ms, for NotBefore shifting. */
  get recordingStart(): number {
    return this.#recordingStart;
  }

  /**
   * The client under test approves events at a position. An event Scheduled now starts as Azure
   * would start it: the replay jumps ahead to where the recording shows it Started. Returns the
   * ids IMDS would refuse (not in the document now), for a 400.
   */
  approve(position: number, ids: readonly string[]): { unknown: string[] } {
    const doc = this.recording.changes[this.indexAt(position)]!.document;
    const current = new Map(doc.Events.map((e) => [e.EventId.toUpperCase(), e]));
    const unknown = ids.filter((id) => !current.has(id.toUpperCase()));
    if (unknown.length > 0) return { unknown };
    for (const id of ids) {
      const key = id.toUpperCase();
      if (current.get(key)!.EventStatus !== 'Scheduled') continue;
      this.#clientApprovals.add(key);
      const started = this.#events.get(key)?.startedAt ?? null;
      if (started === null) continue;
      const jump = this.recording.changes[started]!.at - position;
      if (jump > 0) this.#skip += jump;
    }
    return { unknown: [] };
  }

  report(position: number): ReplayReport {
    const index = this.indexAt(position);
    const recorded = [...this.#events.values()].filter((e) => e.recordedApproval);
    const divergences: Divergence[] = [];
    for (const e of this.#events.values()) {
      const key = e.id.toUpperCase();
      const client = this.#clientApprovals.has(key);
      if (client && !e.recordedApproval) {
        divergences.push({
          eventId: e.id,
          kind: 'client-only',
          message: `the client approved ${e.id}; in the recording nobody did (it started at NotBefore, or never)`,
        });
      } else if (!client && e.recordedApproval && e.firstSeen <= index) {
        divergences.push({
          eventId: e.id,
          kind: 'recording-only',
          message: `the recording shows ${e.id} approved before NotBefore; the client did not approve it`,
        });
      }
    }
    return {
      changes: this.recording.changes.length,
      at: index,
      finished: position >= this.durationMs,
      clientApprovals: [...this.#clientApprovals].map((k) => this.#events.get(k)!.id),
      recordedApprovals: recorded.map((e) => e.id),
      divergences,
    };
  }
}

/**
 * Whether the recording shows someone approving an event (EventId, any case) where change `started`
 * shows it Started: it started APPROVAL_EVIDENCE_MS or more before the NotBefore last shown for it
 * before that change. One pass over the recording, answered by lookup: linear in the recording,
 * however many events start and however long they were shown.
 */
export function recordedApprovals(recording: Recording): (id: string, started: number) => boolean {
  const start = Date.parse(recording.header.startedAt);
  /** Each event's last non-empty NotBefore so far. */
  const notBefores = new Map<string, string>();
  const approved = new Set<string>();
  recording.changes.forEach((change, i) => {
    const startedAt = start + change.at;
    for (const e of change.document.Events) {
      if (e.EventStatus !== 'Started') continue;
      const notBefore = Date.parse(notBefores.get(e.EventId.toUpperCase()) ?? '');
      if (!Number.isNaN(notBefore) && notBefore - startedAt >= APPROVAL_EVIDENCE_MS) approved.add(`${i} ${e.EventId.toUpperCase()}`);
    }
    // Of events listed twice, the first decides, as a search of the document would find it.
    const seen = new Set<string>();
    for (const e of change.document.Events) {
      const id = e.EventId.toUpperCase();
      if (seen.has(id)) continue;
      seen.add(id);
      if (typeof e.NotBefore === 'string' && e.NotBefore !== '') notBefores.set(id, e.NotBefore);
    }
  });
  return (id, started) => approved.has(`${started} ${id.toUpperCase()}`);
}
