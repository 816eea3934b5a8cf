// `forewarn emulator --link-local`: IMDS at http://169.254.169.254 for code that hard-codes it
// (the seeds' sample: "http://169.254.169.254/metadata/scheduledevents"). Each case runs in a
// network namespace of its own, as root, as a CI job or a container would; the address must come off
// lo at a clean stop, and only an address of ours (its label) is ever removed.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { parseEmulatorOptions } from '../../src/cli/emulator.js';
import { LINK_LOCAL_LABEL } from '../../src/cli/link-local.js';
import { UsageError } from '../../src/cli/errors.js';
import { assertNoStack, cliCommand, outputOf, repo } from '../support/cli.js';
import { netnsUnavailable, removeNamespaces, run } from '../support/netns.js';
import { waitFor } from '../support/wait.js';

const ADDRESS = '169.254.169.254';
let unavailable: string | undefined;
let letter = 'k';

describe('--link-local, as flags', () => {
  it('serves IMDS at 169.254.169.254:80, and refuses an --imds of its own', () => {
    assert.deepEqual(parseEmulatorOptions({ linkLocal: true }).imds, { host: ADDRESS, port: 80 });
    assert.throws(
      () => parseEmulatorOptions({ linkLocal: true, imds: '127.0.0.1:9000' }),
      (err: unknown) =>
        err instanceof UsageError &&
        /--link-local serves IMDS at 169\.254\.169\.254:80; leave out --imds 127\.0\.0\.1:9000/.test(err.message),
    );
  });
});

/** A namespace `fwt<pid>-<letter>` (test/support/netns.ts removes it, and a crashed run's), its lo down as new ones are. */
async function namespace(): Promise<string> {
  letter = String.fromCharCode(letter.charCodeAt(0) + 1);
  const name = `fwt${process.pid}-${letter}`;
  await run('ip', ['netns', 'add', name]);
  return name;
}

interface LoAddress {
  local: string;
  prefixlen: number;
  label?: string;
}

async function linkLocalOn(ns: string): Promise<LoAddress | undefined> {
  const [lo] = JSON.parse((await run('ip', ['-n', ns, '-j', 'addr', 'show', 'dev', 'lo'])).stdout) as { addr_info: LoAddress[] }[];
  return lo!.addr_info.find((a) => a.local === ADDRESS && a.prefixlen === 32);
}

type Child = ChildProcessByStdio<null, Readable, Readable>;

/** `forewarn emulator --link-local --json` inside `ns`, with `prefix` before it (setpriv, say). */
function emulatorIn(ns: string, prefix: string[] = []): { child: Child; out: () => string; err: () => string } {
  const [node, args] = cliCommand(['emulator', '--link-local', '--json', '--control', '127.0.0.1:0', '--clock', 'manual']);
  const child = spawn('ip', ['netns', 'exec', ns, ...prefix, node, ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  return { child, out: () => out, err: () => err };
}

async function ready(emulator: ReturnType<typeof emulatorIn>): Promise<{ imdsUrl: string }> {
  const line = await waitFor(
    () => `the ready line; stderr: ${emulator.err()}`,
    () =>
      emulator
        .out()
        .split('\n')
        .find((l) => l.startsWith('{')),
  );
  return JSON.parse(line) as { imdsUrl: string };
}

async function stop(child: Child, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  child.kill(signal);
  return closed;
}

/** The seeds' sample, as code that hard-codes the address: our client with no endpoint, inside `ns`. */
async function documentFrom(ns: string): Promise<{ DocumentIncarnation: number }> {
  const code = `import { ScheduledEventsClient } from ${JSON.stringify(`${repo}src/client/index.ts`)};
const client = new ScheduledEventsClient({ retry: { maxAttempts: 1 } });
const doc = await client.getDocument();
process.stdout.write(JSON.stringify({ endpoint: client.endpoint, DocumentIncarnation: doc.incarnation }));`;
  const env = { ...process.env };
  delete env.FOREWARN_ENDPOINT;
  const { stdout } = await run('ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', '--input-type=module', '-e', code], {
    env,
    timeoutMs: 20_000,
  });
  const seen = JSON.parse(stdout) as { endpoint: string; DocumentIncarnation: number };
  assert.equal(seen.endpoint, `http://${ADDRESS}`);
  return seen;
}

describe('forewarn emulator --link-local in a network namespace', () => {
  before(async () => {
    unavailable = await netnsUnavailable();
    if (unavailable && process.env.FOREWARN_REQUIRE_NETNS === '1') throw new Error(`FOREWARN_REQUIRE_NETNS=1 but ${unavailable}`);
    if (!unavailable) await removeNamespaces(true);
  });
  after(async () => {
    if (!unavailable) await removeNamespaces(false);
  });

  it(
    'adds the address to lo with its label, serves the default endpoint there, and removes it at SIGTERM',
    { timeout: 60_000 },
    async (t) => {
      if (unavailable) return t.skip(unavailable);
      const ns = await namespace();
      const emulator = emulatorIn(ns);
      try {
        assert.equal((await ready(emulator)).imdsUrl, `http://${ADDRESS}:80`);
        assert.equal((await linkLocalOn(ns))?.label, LINK_LOCAL_LABEL);
        assert.match(emulator.err(), /--link-local: added 169\.254\.169\.254\/32 to lo \(label lo:forewarn\); removed at a clean stop/);
        assert.ok((await documentFrom(ns)).DocumentIncarnation >= 1);
      } finally {
        assert.equal(await stop(emulator.child), 0, emulator.err());
      }
      assert.equal(await linkLocalOn(ns), undefined, 'the address is gone from lo');
    },
  );

  it('an address someone else put on lo is used and left there', { timeout: 60_000 }, async (t) => {
    if (unavailable) return t.skip(unavailable);
    const ns = await namespace();
    await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    await run('ip', ['-n', ns, 'addr', 'add', `${ADDRESS}/32`, 'dev', 'lo']);
    const emulator = emulatorIn(ns);
    await ready(emulator);
    assert.match(emulator.err(), /already on lo \(label lo, not ours\): used as it is, and left there/);
    assert.equal(await stop(emulator.child), 0);
    assert.equal((await linkLocalOn(ns))?.label, 'lo', 'still there, as it was');
  });

  it("a killed run's address, known by its label, is taken over and removed at the next clean stop", { timeout: 60_000 }, async (t) => {
    if (unavailable) return t.skip(unavailable);
    const ns = await namespace();
    const killed = emulatorIn(ns);
    await ready(killed);
    await stop(killed.child, 'SIGKILL');
    assert.equal((await linkLocalOn(ns))?.label, LINK_LOCAL_LABEL, 'SIGKILL leaves it');
    const next = emulatorIn(ns);
    await ready(next);
    assert.match(next.err(), /left by an emulator that did not stop cleanly \(label lo:forewarn\): taken over/);
    await documentFrom(ns);
    assert.equal(await stop(next.child), 0);
    assert.equal(await linkLocalOn(ns), undefined);
  });

  it('without CAP_NET_ADMIN: exit 1, saying what it needs and the ways to get it', { timeout: 60_000 }, async (t) => {
    if (unavailable) return t.skip(unavailable);
    const ns = await namespace();
    const emulator = emulatorIn(ns, ['setpriv', '--bounding-set=-net_admin']);
    const { code } = await outputOf(emulator.child);
    assert.equal(code, 1, emulator.err());
    assert.match(
      emulator.err(),
      /--link-local cannot add 169\.254\.169\.254\/32 to lo \(.*not permitted.*\)\. It needs CAP_NET_ADMIN: run it as root/i,
    );
    assert.match(emulator.err(), /unshare --user --map-root-user --net forewarn emulator --link-local/);
    assertNoStack(emulator.err());
    assert.equal(await linkLocalOn(ns), undefined);
  });

  it(
    'where something already answers at the address (a real IMDS on an Azure VM), it is not hidden: exit 1',
    { timeout: 60_000 },
    async (t) => {
      if (unavailable) return t.skip(unavailable);
      const ns = await namespace();
      // The address on an interface of its own, as Azure routes it, with an HTTP server behind it.
      await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
      await run('ip', ['-n', ns, 'link', 'add', 'imds0', 'type', 'veth', 'peer', 'name', 'imds1']);
      await run('ip', ['-n', ns, 'link', 'set', 'imds1', 'up']);
      await run('ip', ['-n', ns, 'addr', 'add', `${ADDRESS}/32`, 'dev', 'imds0']);
      await run('ip', ['-n', ns, 'link', 'set', 'imds0', 'up']);
      const server = spawn(
        'ip',
        [
          'netns',
          'exec',
          ns,
          process.execPath,
          '-e',
          `require('node:http').createServer((q, s) => s.end('{}')).listen(80, '${ADDRESS}', () => console.log('up'))`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      try {
        await new Promise((resolve) => server.stdout.once('data', resolve));
        const emulator = emulatorIn(ns);
        const { code } = await outputOf(emulator.child);
        assert.equal(code, 1, emulator.err());
        assert.match(
          emulator.err(),
          /something already answers at http:\/\/169\.254\.169\.254 \(a real IMDS on an Azure VM, or another emulator\)/,
        );
        assert.equal(await linkLocalOn(ns), undefined, 'lo left alone');
      } finally {
        server.kill('SIGKILL');
      }
    },
  );
});
