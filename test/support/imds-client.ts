// A small fetch-based IMDS client for tests; the real SDK is separate.
import { connect } from 'node:net';
import { jsonOrUndefined } from './json.js';

export interface ImdsResponse {
  status: number;
  headers: Headers;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  body: unknown;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Send `Metadata: true`; default true. */
  metadata?: boolean;
  body?: string | Uint8Array | ReadableStream<Uint8Array>;
}

export class ImdsTestClient {
  constructor(readonly baseUrl: string) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ImdsResponse> {
    const headers: Record<string, string> = { ...(options.metadata === false ? {} : { Metadata: 'true' }), ...options.headers };
    const init: RequestInit & { duplex?: 'half' } = { method, headers };
    if (options.body !== undefined) {
      init.body = options.body as RequestInit['body'];
      if (options.body instanceof ReadableStream) init.duplex = 'half';
    }
    const res = await fetch(new URL(path, this.baseUrl), init);
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: jsonOrUndefined(text) };
  }

  get(path: string, options: RequestOptions = {}): Promise<ImdsResponse> {
    return this.request('GET', path, options);
  }

  post(path: string, body: RequestOptions['body'], options: RequestOptions = {}): Promise<ImdsResponse> {
    return this.request('POST', path, { ...options, body });
  }

  /** Approves events the way the SDK will: a JSON StartRequests body. */
  approve(path: string, ids: readonly string[], options: RequestOptions = {}): Promise<ImdsResponse> {
    const body = JSON.stringify({ StartRequests: ids.map((EventId) => ({ EventId })) });
    return this.post(path, body, { ...options, headers: { 'content-type': 'application/json', ...options.headers } });
  }
}

/** Sends raw bytes over a fresh connection and returns everything the server wrote before closing. */
export function rawHttp(port: number, request: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.write(request);
  });
}
