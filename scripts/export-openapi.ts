// Writes docs/openapi.json from the control API's own schemas: `npm run docs:openapi`.
// Rendered as served with a token and a state file, so it lists every answer the API can give.
import { writeFileSync } from 'node:fs';
import { buildOpenApiDocument } from '../src/emulator/control/openapi.js';

export const OPENAPI_PATH = new URL('../docs/openapi.json', import.meta.url);

export function renderOpenApi(): string {
  return `${JSON.stringify(buildOpenApiDocument({ secured: true, durable: true }), null, 2)}\n`;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  writeFileSync(OPENAPI_PATH, renderOpenApi());
  console.log(`wrote ${OPENAPI_PATH.pathname}`);
}
