// The dashboard: a page at / on the control address, built from src/dashboard into dist/dashboard.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** The same relative path from src/emulator/control and dist/emulator/control. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../../dist/dashboard/', import.meta.url));

/** Everything outside /v1/ belongs to the page, which holds no data and so needs no token. */
export const DASHBOARD_PATHS = /^\/(?!v1(?:[/?]|$))/;

/** [choice] The page runs only what it was shipped with and talks only to the emulator that served it. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function registerDashboard(app: FastifyInstance, dir = DASHBOARD_DIR): void {
  if (!existsSync(join(dir, 'index.html'))) {
    // A checkout that skipped the build still runs the API; the page says what is missing.
    app.get('/', async (_request, reply) =>
      reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send(`The dashboard is not built (no ${join(dir, 'index.html')}). Run \`npm run build\`, then reload.\n`),
    );
    return;
  }
  void app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    // One route per shipped file, so unknown paths keep the API's JSON 404 and 405.
    wildcard: false,
    index: 'index.html',
    // The page is rebuilt with the package; revalidate rather than cache a stale one.
    cacheControl: false,
    // @fastify/static 9 (pinned for Node 20.18) hands over the raw response, not the reply.
    setHeaders: (response) => {
      response.setHeader('cache-control', 'no-cache');
      response.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
      response.setHeader('x-content-type-options', 'nosniff');
    },
  });
}
