// A real webhook for Event Grid tests: a node:http server on a free port that records every request and
// answers as the test says, passing Event Grid's validation handshakes unless told otherwise.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** Answers a request; the default passes both handshakes and acknowledges every delivery with 200. */
export type Responder = (request: Received) => Reply | Promise<Reply>;

export const passHandshakes: Responder = (request): Reply => {
  if (request.method === 'OPTIONS') return { status: 200, headers: { 'webhook-allowed-origin': 'eventgrid.azure.net' } };
  if (request.headers['aeg-event-type'] === 'SubscriptionValidation') {
    const [event] = JSON.parse(request.body) as [{ data: { validationCode: string } }];
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ validationResponse: event.data.validationCode }),
    };
  }
  return { status: 200 };
};

export class Webhook {
  readonly requests: Received[] = [];
  respond: Responder;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    respond: Responder,
  ) {
    this.respond = respond;
  }

  static async start(respond: Responder = passHandshakes): Promise<Webhook> {
    const state: { hook?: Webhook } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received = { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        state.hook!.requests.push(received);
        void Promise.resolve(state.hook!.respond(received)).then(
          (reply) => {
            if (res.destroyed) return;
            res.writeHead(reply.status, reply.headers ?? {});
            res.end(reply.body ?? '');
          },
          () => res.destroy(),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    state.hook = new Webhook(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`, respond);
    return state.hook;
  }

  /** The deliveries of events (not handshakes), in the order they arrived. */
  deliveries(): Received[] {
    return this.requests.filter((r) => r.method === 'POST' && r.headers['aeg-event-type'] === 'Notification');
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
