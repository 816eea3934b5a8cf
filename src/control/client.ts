// A typed client for the control API of any running emulator (docs/library.md says why it lives here).
import type { ControlErrorBody, ERROR_FIELD_PREFERENCE } from '../protocol/control.js';
import { ControlApiError, ControlConnectionError } from './errors.js';
import type {
  Clock,
  Document,
  Event,
  Fault,
  FaultBody,
  Fleet,
  History,
  Operation,
  OperationBody,
  OperationCreated,
  OperationList,
  OperationStatus,
  PageQuery,
  ProcessBinding,
  ProcessBody,
  ScenarioBody,
  ScenarioList,
  ScenarioRun,
  Vm,
  VmBody,
} from './types.js';

export interface ControlClientOptions {
  /** The control API's base URL, e.g. http://127.0.0.1:8170. */
  baseUrl: string | URL;
  /** Bearer token, when the emulator requires one. */
  token?: string | undefined;
  /** Injectable for tests and proxies; the global fetch by default. */
  fetch?: typeof fetch;
  /** How long one call may take before it fails; DEFAULT_CONTROL_TIMEOUT_MS by default. */
  timeoutMs?: number;
}

/** [choice] Every route answers at once; a call still waiting after this is stuck. */
export const DEFAULT_CONTROL_TIMEOUT_MS = 30_000;

// The client loads nothing outside src/control at run time; the type holds this to the contract's value.
const PREFER_ERROR_FIELD: typeof ERROR_FIELD_PREFERENCE = 'error-field';

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

export class ControlClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: ControlClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    if (options.token !== undefined && (options.token === '' || /\s/.test(options.token))) {
      throw new TypeError('token must be one non-empty word, without spaces or line breaks');
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new TypeError(`timeoutMs must be a positive number, got ${String(timeoutMs)}`);
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#timeoutMs = timeoutMs;
  }

  // ---- fleet ----
  fleet(): Promise<Fleet> {
    return this.#call('GET', '/v1/fleet');
  }
  vm(name: string): Promise<Vm> {
    return this.#call('GET', `/v1/vms/${seg(name)}`);
  }
  addVm(body: VmBody): Promise<Vm> {
    return this.#call('POST', '/v1/vms', body);
  }
  removeVm(name: string): Promise<Vm> {
    return this.#call('DELETE', `/v1/vms/${seg(name)}`);
  }
  /** Starts a VM a Spot eviction deallocated; 409 when it is not deallocated. */
  startVm(name: string): Promise<Vm> {
    return this.#call('POST', `/v1/vms/${seg(name)}/start`);
  }
  /** Real impact: binds the VM to a pid, a pidfile or a command (argv) Forewarn starts and owns. */
  bindProcess(vm: string, body: ProcessBody): Promise<ProcessBinding> {
    return this.#call('PUT', `/v1/vms/${seg(vm)}/process`, body);
  }
  /** What the VM is bound to, with its impact log; 404 when it is bound to nothing. */
  processOf(vm: string): Promise<ProcessBinding> {
    return this.#call('GET', `/v1/vms/${seg(vm)}/process`);
  }
  /** Unbinds the VM: an owned command is terminated, a process Forewarn stopped is continued. */
  unbindProcess(vm: string): Promise<ProcessBinding> {
    return this.#call('DELETE', `/v1/vms/${seg(vm)}/process`);
  }
  /** The Scheduled Events document the VM would see now; the API's newest version unless told. */
  document(vm: string, options: { apiVersion?: string } = {}): Promise<Document> {
    const query = options.apiVersion === undefined ? '' : `?api-version=${encodeURIComponent(options.apiVersion)}`;
    return this.#call('GET', `/v1/vms/${seg(vm)}/document${query}`);
  }

  // ---- operations and events ----
  /** Creates an operation (POST /v1/operations), as `forewarn trigger` does. */
  trigger(body: OperationBody): Promise<OperationCreated> {
    return this.#call('POST', '/v1/operations', body);
  }
  operations(query: PageQuery & { status?: OperationStatus } = {}): Promise<OperationList> {
    return this.#call('GET', `/v1/operations${queryString(query)}`);
  }
  async operation(id: string): Promise<Operation> {
    return (await this.#call<{ operation: Operation }>('GET', `/v1/operations/${seg(id)}`)).operation;
  }
  async events(): Promise<Event[]> {
    return (await this.#call<{ events: Event[] }>('GET', '/v1/events')).events;
  }
  async event(id: string): Promise<Event> {
    return (await this.#call<{ event: Event }>('GET', `/v1/events/${seg(id)}`)).event;
  }
  history(query: PageQuery = {}): Promise<History> {
    return this.#call('GET', `/v1/history${queryString(query)}`);
  }
  /** Approves the event on behalf of `vm`, as if it had POSTed to IMDS. */
  async approve(eventId: string, vm: string): Promise<Event> {
    return (await this.#call<{ event: Event }>('POST', `/v1/events/${seg(eventId)}/approve`, { vm })).event;
  }
  async cancel(eventId: string): Promise<Event> {
    return (await this.#call<{ event: Event }>('POST', `/v1/events/${seg(eventId)}/cancel`)).event;
  }
  async complete(eventId: string): Promise<Event> {
    return (await this.#call<{ event: Event }>('POST', `/v1/events/${seg(eventId)}/complete`)).event;
  }

  // ---- clock, faults, reset ----
  clock(): Promise<Clock> {
    return this.#call('GET', '/v1/clock');
  }
  /** Moves a manual clock on; the API answers 409 on system time. */
  advanceClock(seconds: number): Promise<Clock> {
    return this.#call('POST', '/v1/clock/advance', { seconds });
  }
  async addFault(body: FaultBody): Promise<Fault> {
    return (await this.#call<{ fault: Fault }>('POST', '/v1/faults', body)).fault;
  }
  async faults(): Promise<Fault[]> {
    return (await this.#call<{ faults: Fault[] }>('GET', '/v1/faults')).faults;
  }
  /** Removes every fault; resolves to how many there were. */
  async clearFaults(): Promise<number> {
    return (await this.#call<{ cleared: number }>('DELETE', '/v1/faults')).cleared;
  }
  /** Back to the fleet's start: no events, operations, history or faults. */
  async reset(): Promise<void> {
    await this.#call('POST', '/v1/reset');
  }

  // ---- scenarios ----
  runScenario(body: ScenarioBody): Promise<ScenarioRun> {
    return this.#call('POST', '/v1/scenarios', body);
  }
  scenarioRun(id: string): Promise<ScenarioRun> {
    return this.#call('GET', `/v1/scenarios/${seg(id)}`);
  }
  scenarios(): Promise<ScenarioList> {
    return this.#call('GET', '/v1/scenarios');
  }

  async #call<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          // Refusals then name the request field at fault, for ControlApiError.field.
          prefer: PREFER_ERROR_FIELD,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(this.#token !== undefined ? { authorization: `Bearer ${this.#token}` } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new ControlConnectionError(connectionProblem(err, this.baseUrl, this.#timeoutMs), url, { cause: err });
    }
    const { text, data } = await readJsonBody(response);
    if (response.status < 200 || response.status > 299) {
      const refusal = data as Partial<Record<keyof ControlErrorBody, unknown>> | undefined;
      const message = typeof refusal?.error === 'string' ? refusal.error : text.slice(0, 200) || response.statusText;
      throw new ControlApiError(response.status, message, method, path, typeof refusal?.field === 'string' ? refusal.field : undefined);
    }
    if (data === undefined && text !== '') throw new ControlApiError(response.status, 'the answer is not JSON', method, path);
    return data as T;
  }
}

function normalizeBaseUrl(raw: string | URL): string {
  const text = String(raw).trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`baseUrl must be a URL such as http://127.0.0.1:8170, got ${JSON.stringify(String(raw))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(text)}`);
  if (url.search !== '' || url.hash !== '') throw new TypeError(`baseUrl must have no ?query or #fragment, got ${JSON.stringify(text)}`);
  return text;
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query) as [string, unknown][]) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function connectionProblem(err: unknown, baseUrl: string, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError')
    return `no answer from the control API at ${baseUrl} within ${timeoutMs / 1000} s`;
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return `cannot reach the control API at ${baseUrl}: connection refused (is the emulator running?)`;
  return `cannot reach the control API at ${baseUrl}: ${e.cause?.message ?? e.message}`;
}

/** A control API answer's text and its JSON, or undefined when it is empty or not JSON (a proxy's error page). */
export async function readJsonBody(response: Response): Promise<{ text: string; data: unknown }> {
  const text = await response.text();
  try {
    return { text, data: text === '' ? undefined : JSON.parse(text) };
  } catch {
    return { text, data: undefined };
  }
}
