// /metrics, /healthz and /readyz over node:http: three read-only routes need no framework.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Health } from '../client/index.js';
import type { AgentMetrics } from './metrics.js';
import { CONFIG_DEFAULTS } from './config.js';
import { formatHostPort, parseHostPort, type HostPort } from '../shared/host-port.js';

export interface StatusServerOptions {
  /** `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (loopback); port 0 picks a free one. */
  listen: string;
  metrics: AgentMetrics;
  health: () => Health;
  readyWithinSeconds: number;
  /** A reason to be not ready beyond IMDS (the journal cannot be written), or null. */
  notReady?: () => string | null;
  /** Readiness in place of IMDS's (the controller: its webhook receiver). */
  ready?: () => { ready: boolean; reason: string };
}

export interface StatusServer {
  url: string;
  close(): Promise<void>;
}

/** The config's `listen`, read by the one HOST:PORT parser; a HostPortError names the field. */
export function parseListen(text: string): HostPort {
  return parseHostPort(text, 'listen', CONFIG_DEFAULTS.listen);
}

/** Ready while reads succeed: the last good one within `readyWithinSeconds`. The reason says why not. */
export function readiness(health: Health, readyWithinSeconds: number): { ready: boolean; reason: string } {
  if (health.msSinceSuccess === null) {
    const error = health.lastError ? `: ${health.lastError.message}` : '';
    return { ready: false, reason: `no good read of IMDS yet${error}` };
  }
  const seconds = health.msSinceSuccess / 1000;
  if (seconds > readyWithinSeconds) {
    const error = health.lastError ? `; last error: ${health.lastError.message}` : '';
    return { ready: false, reason: `last good read of IMDS ${seconds.toFixed(1)} s ago, over ${readyWithinSeconds} s${error}` };
  }
  return { ready: true, reason: `last good read of IMDS ${seconds.toFixed(1)} s ago` };
}

export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const { host, port } = parseListen(options.listen);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'application/json', '{"error":"only GET"}');
    if (path === '/healthz') return send(200, 'application/json', '{"status":"ok"}\n');
    if (path === '/readyz') {
      const imds = options.ready?.() ?? readiness(options.health(), options.readyWithinSeconds);
      const other = options.notReady?.() ?? null;
      const r = other === null ? imds : { ready: false, reason: imds.ready ? other : `${other}; ${imds.reason}` };
      return send(r.ready ? 200 : 503, 'application/json', `${JSON.stringify({ ready: r.ready, reason: r.reason })}\n`);
    }
    if (path === '/metrics') {
      options.metrics.text().then(
        (text) => send(200, options.metrics.registry.contentType, text),
        (err: Error) => send(500, 'text/plain', `${err.message}\n`),
      );
      return;
    }
    send(404, 'application/json', '{"error":"not found; try /metrics, /healthz or /readyz"}\n');
  });
  // Scrapers keep connections alive; closing must not wait for them.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${formatHostPort(address.address, address.port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
