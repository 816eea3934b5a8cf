// A real Azurite Blob server for tests, as a child process on a free loopback port. Its data lives in a
// temp folder on disk (not --inMemoryPersistence), so stop() then start() is an outage the data survives.
// With `https: { oauth: true }` it serves TLS with a self-signed certificate made here by openssl and
// checks bearer tokens (--oauth basic): a TokenCredential's requests are refused over plain HTTP.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent as HttpsAgent } from 'node:https';
import type { RequestPolicyFactory } from '@azure/storage-blob';

/** The emulator's well-known account and key (public, in Azurite's and Microsoft's docs). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

// The package's own entry, run by this Node: no shell shim, and the pid we kill is Azurite's.
const MAIN = fileURLToPath(new URL('../../node_modules/azurite/dist/src/blob/main.js', import.meta.url));

export interface AzuriteOptions {
  /** TLS with a self-signed certificate for 127.0.0.1 and localhost, and bearer-token checks. */
  https?: { oauth: true };
}

export interface Azurite {
  port: number;
  /** `http(s)://127.0.0.1:PORT/devstoreaccount1` (path-style, as Azurite serves an IP host). */
  blobEndpoint: string;
  /** Shared key for the well-known account (meant for the HTTP server). */
  connectionString: string;
  /** With https: the certificate (PEM) and its file, for a client to trust (an https.Agent's `ca`, NODE_EXTRA_CA_CERTS). */
  ca?: string;
  caPath?: string;
  /** Where Azurite keeps its data across stop() and start(). */
  location: string;
  containerUrl(name: string): string;
  /** Creates the container with the shared key (also on the HTTPS server, whose shared key still works). */
  createContainer(name: string): Promise<void>;
  /** A store outage: SIGTERM lets Azurite save its database first; SIGKILL may lose the last ~5 s of writes. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Starts it again on the same port and folder, with the data it had. */
  start(): Promise<void>;
  /** Stops it for good and removes its folder. */
  close(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** A port free on loopback right now (Azurite binds it a moment later). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'pipe' },
  );
  return { cert, key };
}

export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Whatever ends the test process (a failure, --test-force-exit), no Azurite outlives it.
    process.on('exit', () => {
      for (const child of running) child.kill('SIGKILL');
    });
  }
  const root = mkdtempSync(join(tmpdir(), 'forewarn-azurite-'));
  const location = join(root, 'data');
  const tls = options.https ? selfSignedCert(root) : undefined;
  const port = await freePort();
  const scheme = tls ? 'https' : 'http';
  const blobEndpoint = `${scheme}://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  // --skipApiVersionCheck: @azure/storage-blob 12.32 sends x-ms-version 2026-04-06, newer than Azurite 3.35 knows.
  // --disableTelemetry: no attempt to reach the internet from a test.
  const args = [MAIN, '--blobHost', '127.0.0.1', '--blobPort', String(port), '--location', location, '--silent'];
  args.push('--skipApiVersionCheck', '--disableTelemetry');
  if (tls) args.push('--cert', tls.cert, '--key', tls.key, '--oauth', 'basic');

  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    if (child) throw new Error('Azurite is already running');
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    running.add(proc);
    proc.once('exit', () => {
      running.delete(proc);
      if (child === proc) child = undefined;
    });
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`Azurite did not start within 20 s:\n${output}`)), 20_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('successfully listens on')) done();
      };
      const onExit = (code: number | null, signal: string | null) =>
        fail(new Error(`Azurite exited (${code ?? signal}) before listening:\n${output}`));
      function cleanup() {
        clearTimeout(timer);
        proc.stdout!.off('data', onData);
        proc.off('exit', onExit);
      }
      function done() {
        cleanup();
        resolve();
      }
      function fail(err: Error) {
        cleanup();
        proc.kill('SIGKILL');
        reject(err);
      }
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      proc.once('exit', onExit);
    });
    // Keep draining its output so a chatty child never blocks on a full pipe.
    proc.stdout!.resume();
    proc.stderr!.resume();
  }

  async function stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const proc = child;
    if (!proc) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    // Closing waits for its open connections; past a few seconds it is killed outright.
    const timer = setTimeout(() => proc.kill('SIGKILL'), 8_000);
    await exited;
    clearTimeout(timer);
  }

  await start();
  return {
    port,
    blobEndpoint,
    connectionString:
      `DefaultEndpointsProtocol=${scheme};AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};` + `BlobEndpoint=${blobEndpoint};`,
    ...(tls ? { ca: readFileSync(tls.cert, 'utf8'), caPath: tls.cert } : {}),
    location,
    containerUrl: (name) => `${blobEndpoint}/${name}`,
    async createContainer(name) {
      const { ContainerClient, StorageSharedKeyCredential, newPipeline } = await import('@azure/storage-blob');
      const pipeline = newPipeline(new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
      const agent = tls ? new HttpsAgent({ ca: readFileSync(tls.cert, 'utf8') }) : undefined;
      if (agent) pipeline.factories.push(agentPolicy(agent));
      await new ContainerClient(`${blobEndpoint}/${name}`, pipeline).createIfNotExists();
      agent?.destroy();
    },
    stop,
    start,
    async close() {
      await stop('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A request policy (the SDK's downlevel kind) sending every request through `agent`, which trusts Azurite's certificate. */
export function agentPolicy(agent: HttpsAgent): RequestPolicyFactory {
  return {
    create: (next) => ({
      sendRequest(request) {
        request.agent = agent;
        return next.sendRequest(request);
      },
    }),
  };
}
