// Servers for bench/imds-throughput, each run in a process of its own (wrk runs in another).
//   forewarn-1     the emulator's IMDS surface with one VM
//   forewarn-10k   the same with 10,000 VMs, addressed by /vms/NAME/ prefix
//   bare BODIES    a bare node:http server answering each path with the bytes forewarn answers for it
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../src/shared/clock.js';
import { Engine } from '../src/emulator/engine/engine.js';
import type { VmSpec } from '../src/emulator/engine/fleet.js';
import { FaultRegistry } from '../src/emulator/imds/faults.js';
import { buildImdsServer } from '../src/emulator/imds/server.js';
import { RateLimiter } from '../src/emulator/imds/rate-limit.js';

const mode = process.argv[2];
const UNREACHED_RATE_LIMIT = 1e9;

function fleetOf(count: number): VmSpec[] {
  if (count === 1) return [{ name: 'vm0' }];
  // Availability sets of 10 VMs over 2 fault domains, as a realistic spread of tenants.
  return Array.from({ length: count }, (_, i) => ({
    name: `vm${i}`,
    tenant: `as${Math.floor(i / 10)}`,
    tenantKind: 'availabilitySet' as const,
    faultDomain: i % 2,
    faultDomainCount: 2,
  }));
}

async function forewarn(count: number) {
  const engine = new Engine({ clock: new ManualClock(), fleet: fleetOf(count) });
  // Every tenant has a live event, so each document is a realistic one to render and serve.
  for (let t = 0; t < Math.max(1, count / 10); t++) {
    engine.createOperation({ type: 'freeze', vms: [count === 1 ? 'vm0' : `vm${t * 10}`] });
  }
  // The limiter is on, so its cost is measured, at a limit no run reaches (0 would skip it).
  const app = buildImdsServer({ engine, faults: new FaultRegistry(), rateLimiter: new RateLimiter(UNREACHED_RATE_LIMIT) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

async function bare(bodiesFile: string) {
  // Path (as requested) -> the bytes and ETag forewarn answers for it.
  const bodies = JSON.parse(readFileSync(bodiesFile, 'utf8')) as Record<string, { body: string; etag: string }>;
  const answers = new Map(
    Object.entries(bodies).map(([path, { body, etag }]) => {
      const bytes = Buffer.from(body);
      return [
        path,
        { bytes, headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': bytes.length, etag } },
      ] as const;
    }),
  );
  const server = createServer((req, res) => {
    const answer = answers.get(req.url!);
    if (answer === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, answer.headers);
    res.end(answer.bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const port =
  mode === 'forewarn-1'
    ? await forewarn(1)
    : mode === 'forewarn-10k'
      ? await forewarn(10_000)
      : mode === 'bare'
        ? await bare(process.argv[3]!)
        : null;
if (port === null) {
  console.error(`unknown server mode ${mode}`);
  process.exit(2);
}
// The parent asks for CPU time around each run, to price a request in server CPU alone.
process.on('message', () => process.send!(process.cpuUsage()));
process.stdout.write(`${port}\n`);
