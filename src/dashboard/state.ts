// The page's picture of the emulator: loaded whole on (re)connect, then part by part as the stream says what changed.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { StreamTopic } from '../emulator/control/schemas.js';
import {
  ApiError,
  ControlApi,
  type ClockResponse,
  type EndedEventResponse,
  type EventResponse,
  type Fault,
  type FleetResponse,
  type ImpactEntry,
  type OperationResponse,
  type ScenarioInfo,
} from './api.js';
import { TIMELINE_HISTORY } from './components/Timeline.js';
import { ms } from './format.js';
import { keepLive, type LinkState } from './live.js';

export interface Model {
  fleet: FleetResponse | null;
  events: EventResponse[];
  /** The TIMELINE_HISTORY events that ended last, the latest first: what the timeline draws. */
  history: EndedEventResponse[];
  /** Running operations only: what the rolling-update progress shows. */
  operations: OperationResponse[];
  clock: ClockResponse | null;
  faults: Fault[];
  scenarios: ScenarioInfo[];
  /** The last thing real impact did to each VM's bound process, as the stream told it. */
  impacts: Readonly<Record<string, ImpactEntry>>;
  /** The emulator's time as last heard, and when (performance.now) it was heard. */
  serverNow: number;
  heardAt: number;
}

type Part = 'fleet' | 'events' | 'history' | 'operations' | 'clock' | 'faults' | 'scenarios';
const ALL_PARTS: readonly Part[] = ['fleet', 'events', 'history', 'operations', 'clock', 'faults', 'scenarios'];

/** What to load again after a `changed` frame. */
const PARTS_OF: Readonly<Record<StreamTopic, readonly Part[]>> = {
  engine: ['fleet', 'events', 'history', 'operations'],
  clock: ['clock'],
  faults: ['faults'],
  scenarios: [],
};

const EMPTY: Model = {
  fleet: null,
  events: [],
  history: [],
  operations: [],
  clock: null,
  faults: [],
  scenarios: [],
  impacts: {},
  serverNow: 0,
  heardAt: 0,
};

export interface Dashboard {
  api: ControlApi;
  model: Model;
  link: LinkState;
  /** Set when a load failed for a reason other than the link. */
  loadError: string | null;
  /** Bumped whenever a VM's document changes, so the document view reloads. */
  documentVersion: number;
  /** Bumped when a scenario run starts or ends. */
  scenarioVersion: number;
  needsToken: boolean;
  submitToken(token: string): void;
}

export function useDashboard(): Dashboard {
  const api = useMemo(() => new ControlApi(), []);
  const [model, setModel] = useState<Model>(EMPTY);
  const [link, setLink] = useState<LinkState>('connecting');
  const [loadError, setLoadError] = useState<string | null>(null);
  const [documentVersion, setDocumentVersion] = useState(0);
  const [scenarioVersion, setScenarioVersion] = useState(0);
  const [needsToken, setNeedsToken] = useState(false);
  const [session, setSession] = useState(0);

  // One load at a time; parts asked for meanwhile are loaded right after, together.
  const loading = useRef(false);
  const pending = useRef(new Set<Part>());

  const load = useCallback(
    async (parts: Iterable<Part>) => {
      for (const p of parts) pending.current.add(p);
      if (loading.current) return;
      loading.current = true;
      try {
        while (pending.current.size > 0) {
          const want = new Set(pending.current);
          pending.current.clear();
          const next: Partial<Model> = {};
          await Promise.all([
            want.has('fleet') && api.fleet().then((v) => void (next.fleet = v)),
            want.has('events') && api.events().then((v) => void (next.events = v)),
            // Only what the page shows: history and finished operations can run to --history-limit.
            want.has('history') && api.history(TIMELINE_HISTORY).then((v) => void (next.history = v)),
            want.has('operations') && api.operations('running').then((v) => void (next.operations = v)),
            want.has('clock') &&
              api.clock().then((v) => {
                next.clock = v;
                next.serverNow = ms(v.now);
                next.heardAt = performance.now();
              }),
            want.has('faults') && api.faults().then((v) => void (next.faults = v)),
            want.has('scenarios') && api.scenarios().then((v) => void (next.scenarios = v)),
          ]);
          setModel((m) => ({ ...m, ...next }));
          setLoadError(null);
        }
      } catch (err) {
        pending.current.clear();
        if (err instanceof ApiError && err.status === 401) setNeedsToken(true);
        // A failure while the emulator is away is the link's to report; the next hello reloads.
        else if (!(err instanceof TypeError)) setLoadError(err instanceof Error ? err.message : String(err));
      } finally {
        loading.current = false;
      }
    },
    [api],
  );

  useEffect(() => {
    const controller = new AbortController();
    const heard = (now: string) => setModel((m) => ({ ...m, serverNow: ms(now), heardAt: performance.now() }));
    void keepLive(
      api,
      {
        onHello: (now) => {
          heard(now);
          setNeedsToken(false);
          void load(ALL_PARTS);
          setDocumentVersion((v) => v + 1);
          setScenarioVersion((v) => v + 1);
        },
        onChanged: (topics, now) => {
          heard(now);
          void load(topics.flatMap((t) => PARTS_OF[t] ?? []));
          if (topics.includes('scenarios')) setScenarioVersion((v) => v + 1);
        },
        onDocument: () => setDocumentVersion((v) => v + 1),
        onImpact: (entry) => setModel((m) => ({ ...m, impacts: { ...m.impacts, [entry.vm]: entry } })),
        onState: (state) => {
          setLink(state);
          if (state === 'unauthorized') setNeedsToken(true);
        },
      },
      controller.signal,
    );
    return () => controller.abort();
  }, [api, load, session]);

  const submitToken = useCallback(
    (token: string) => {
      api.setToken(token.trim() === '' ? null : token.trim());
      setNeedsToken(false);
      // A new session reconnects the stream with the token; its hello loads everything.
      setSession((s) => s + 1);
    },
    [api],
  );

  return { api, model, link, loadError, documentVersion, scenarioVersion, needsToken, submitToken };
}

/** The emulator's time now: still for the manual clock, running for the system clock. */
export function useNow(model: Model): number {
  const running = model.clock?.mode === 'system';
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!running) return;
    // Redraws the countdowns once a second; it reads nothing from the emulator.
    const timer = setInterval(() => setTick((t) => t + 1), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return running ? model.serverNow + (performance.now() - model.heardAt) : model.serverNow;
}
