// The control API as the page calls it: same origin, JSON, and the bearer token when one is set.
import type {
  ClockResponse,
  EndedEventResponse,
  EventResponse,
  FaultResponse,
  FleetResponse,
  OperationResponse,
  ScenarioRun,
} from '../emulator/control/schemas.js';
import { controlErrorOf, MAX_PAGE_LIMIT } from '../protocol/control.js';

export type { ClockResponse, EndedEventResponse, EventResponse, FleetResponse, OperationResponse, ScenarioRun };
export type Fault = FaultResponse;
export type VmResponse = FleetResponse['vms'][number];
export type DeletedVmResponse = FleetResponse['deleted'][number];
export type { ImpactEntry } from '../emulator/impact/log.js';

export interface ScenarioInfo {
  name: string;
  description: string;
}

/** A refusal from the emulator, with its own message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * [choice] The token lives in sessionStorage: it survives a reload of the tab, never reaches
 * a URL (where logs would keep it), and is gone when the tab closes.
 */
const TOKEN_KEY = 'forewarn.token';

export class ControlApi {
  #token: string | null;

  constructor(private readonly storage: Storage | null = globalThis.sessionStorage ?? null) {
    this.#token = storage?.getItem(TOKEN_KEY) ?? null;
  }

  get token(): string | null {
    return this.#token;
  }

  setToken(token: string | null): void {
    this.#token = token;
    if (token === null) this.storage?.removeItem(TOKEN_KEY);
    else this.storage?.setItem(TOKEN_KEY, token);
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.#token === null ? extra : { ...extra, authorization: `Bearer ${this.#token}` };
  }

  async request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await fetch(path, {
      method,
      headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      body: body === undefined ? null : JSON.stringify(body),
      cache: 'no-store',
      signal: signal ?? null,
    });
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, errorText(res.status, text));
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /** The document exactly as IMDS would send it: the raw text, not re-serialized. */
  async documentText(vm: string, apiVersion: string, signal?: AbortSignal): Promise<string> {
    const res = await fetch(`/v1/vms/${encodeURIComponent(vm)}/document?api-version=${encodeURIComponent(apiVersion)}`, {
      headers: this.headers(),
      cache: 'no-store',
      signal: signal ?? null,
    });
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, errorText(res.status, text));
    return text;
  }

  fleet = () => this.request<FleetResponse>('GET', '/v1/fleet');
  events = () => this.request<{ events: EventResponse[] }>('GET', '/v1/events').then((r) => r.events);
  /** The `limit` events that ended last, the latest first: one page, no more. */
  history = (limit: number) =>
    this.request<{ events: EndedEventResponse[]; next: string | null }>('GET', `/v1/history?limit=${limit}`).then((r) => r.events);

  /** Every operation in this state, newest first, following the pages to the end. */
  operations = async (status: OperationResponse['status']): Promise<OperationResponse[]> => {
    const all: OperationResponse[] = [];
    let before: string | null = null;
    do {
      const query = new URLSearchParams({ status, limit: String(MAX_PAGE_LIMIT) });
      if (before !== null) query.set('before', before);
      const page = await this.request<{ operations: OperationResponse[]; next: string | null }>('GET', `/v1/operations?${query}`);
      all.push(...page.operations);
      before = page.next;
    } while (before !== null);
    return all;
  };
  clock = () => this.request<ClockResponse>('GET', '/v1/clock');
  faults = () => this.request<{ faults: Fault[] }>('GET', '/v1/faults').then((r) => r.faults);
  scenarios = () => this.request<{ scenarios: ScenarioInfo[] }>('GET', '/v1/scenarios').then((r) => r.scenarios);
  scenarioRun = (id: string) => this.request<ScenarioRun>('GET', `/v1/scenarios/${encodeURIComponent(id)}`);
}

function errorText(status: number, text: string): string {
  try {
    const refusal = controlErrorOf(JSON.parse(text));
    if (refusal) return refusal.error;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return text.trim() === '' ? `HTTP ${status}` : `HTTP ${status}: ${text.trim().slice(0, 300)}`;
}
