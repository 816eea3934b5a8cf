// The README's shell commands, run in order against the shipped examples on emulators the test starts.
// Blocks marked ```sh test run; a command in any other ```sh block must be left out below with a reason,
// so a new command is either run or explained, and never run by accident (`npm pack`, say).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { spawnReady, type SpawnedEmulator } from './cli/spawn-emulator.js';
import { cliCommand, outputOf, repo } from './support/cli.js';
import { delay } from './support/wait.js';

/**
 * Commands left out, each with why. Every entry must still match a README command, so a stale one fails.
 * Keys are commands with their trailing `# comment` removed.
 */
const LEFT_OUT: Record<string, string> = {
  'npm pack -w @forewarn/client --include-workspace-root':
    "packs and builds both packages; CI's packed-install step (scripts/smoke-packed.mjs) does that",
  'npm install --save-dev /path/to/forewarn-0.1.0.tgz /path/to/forewarn-client-0.1.0.tgz':
    "installs into another project; CI's packed-install step does that",
  'npm install': 'the test already runs in an installed clone; installing again would fetch from the registry',
  'docker build --target emulator -t forewarn-emulator .':
    'needs a Docker engine; .ci/docker-build builds and runs the image where one runs',
  'docker run --rm -p 127.0.0.1:8169:8169 -p 127.0.0.1:8170:8170 forewarn-emulator':
    'needs a Docker engine; .ci/docker-build runs the image',
  'docker run --rm -p 127.0.0.1:8169:8169 -p 127.0.0.1:8170:8170 forewarn-emulator --imds 0.0.0.0:8169 --control 0.0.0.0:8170 --timing dev --clock manual':
    'needs a Docker engine; .ci/docker-build runs the image',
  'sudo npx forewarn emulator --link-local &':
    "changes this machine's lo; test/cli/link-local.test.ts runs --link-local in network namespaces of its own",
  "unshare --user --map-root-user --net sh -c 'npx forewarn emulator --link-local & sleep 2; python3 my_handler.py'":
    'runs a handler of yours; test/cli/link-local.test.ts runs --link-local in network namespaces of its own',
  'npm start': 'runs until Ctrl-C; it is `forewarn emulator` with no flags, which this test starts as the default emulator',
  'npm test': 'the whole test suite, this test included',
  'npx forewarn watch --json | jq .': 'runs until Ctrl-C; test/cli/client-commands.test.ts drives watch',
  'npx forewarn record --endpoint http://169.254.169.254 --output incident.jsonl --events 1 --anonymise':
    'needs an Azure VM; test/cli/record.test.ts records the emulator',
  "export FOREWARN_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n')":
    'sets a token in the shell for the two lines after it; test/emulator/impact/trust.test.ts starts --impact with a token',
  'npx forewarn emulator --impact &':
    'runs until killed, on the default ports; test/emulator/impact/trust.test.ts starts `forewarn emulator --impact` as a process',
  'curl -s -X PUT http://127.0.0.1:8170/v1/vms/vm0/process -H "Authorization: Bearer $FOREWARN_TOKEN" -H \'content-type: application/json\' -d \'{"command": ["node", "examples/impact-demo/service.mjs", "18080", "vm0"]}\'':
    'starts a server on a fixed port that outlives the command; test/emulator/impact drives binding, and the demo below binds for real',
  'npx forewarn replay incident.jsonl --imds 127.0.0.1:8169 --control 127.0.0.1:8170':
    'runs until Ctrl-C, on the default ports; test/emulator/replay/replay.test.ts drives replay',
};

/** Placeholders a reader fills in, and what the test puts there: the newest Scheduled event of the emulator. */
const PLACEHOLDERS: [string, string][] = [
  // Inside a single-quoted JSON body: close the quotes around the substitution.
  ['<EventId from the document>', `'"$(live_event)"'`],
  ['C7061BAC-AFDC-4513-B24B-AA5F13A16123', '$(live_event)'],
];

/** What some blocks must print besides exiting 0, found by a command of the block. */
const EXPECT: { command: string; output: RegExp; why: string }[] = [
  {
    command: '/v1/clock/advance -d',
    output: /"EventStatus":"Started"/,
    why: 'the manual-clock example: the Freeze has Started after the advance',
  },
  {
    command: '/scheduledevents/$EVENT_ID/acknowledge',
    output: /^\{"value":"Successfully Approved"\}$/m,
    why: 'the ARM example approves the event it triggered, as ARM answers (SPEC §4, Event Grid and ARM)',
  },
  { command: 'npx forewarn approve C7061BAC', output: /^approved [0-9A-F-]{36}$/m, why: 'the approve example approves a live event' },
  {
    command: 'trigger spot-eviction',
    output: /^operation [\s\S]*^operation [\s\S]*^operation [\s\S]*^operation [\s\S]*^operation \S+\nevent [0-9A-F-]{36}\n$/m,
    why: 'five triggers, five operations; the last evicts the Spot VM with an event',
  },
  { command: 'scenario run scenarios/spot-eviction.yaml', output: /passed: all \d+ steps/, why: 'the live scenario passes' },
  { command: 'scenario run live-migration --control', output: /passed: all \d+ steps/, why: 'the remote scenario passes' },
  {
    command: 'node examples/impact-demo/run.mjs',
    output: /with the agent +\d+ answered +0 lost/,
    why: 'the demo loses requests only without the agent',
  },
];

interface Block {
  line: number;
  /** Marked ```sh test: its commands run. */
  run: boolean;
  commands: string[];
}

/** The ```sh blocks, each command joined across `\` line ends and stripped of a trailing comment. */
function shBlocks(readme: string): Block[] {
  const blocks: Block[] = [];
  for (const match of readme.matchAll(/^```sh( test)?\r?\n([\s\S]*?)^```$/gm)) {
    const line = readme.slice(0, match.index).split('\n').length;
    const joined = match[2]!.replace(/\\\r?\n\s*/g, '');
    const commands = joined
      .split('\n')
      .map((c) => c.replace(/\s+#\s.*$/, '').trim())
      .filter((c) => c !== '' && !c.startsWith('#'));
    blocks.push({ line, run: match[1] !== undefined, commands });
  }
  return blocks;
}

const isEmulator = (command: string) => /^npx forewarn emulator\b/.test(command);

/** An emulator line, on free ports, in the background of nothing: the test holds it and reads its --json line. */
function emulatorArgs(command: string): string {
  let args = command
    .replace(/^npx forewarn emulator/, '')
    .replace(/\s*&$/, '')
    .replace(/:(8169|8170)\b/g, ':0');
  if (!/--imds\b/.test(args)) args += ' --imds 127.0.0.1:0';
  if (!/--control\b/.test(args)) args += ' --control 127.0.0.1:0';
  return `exec forewarn emulator${args} --json`;
}

function substitute(command: string, emulator: SpawnedEmulator): string {
  const imds = new URL(emulator.ready.imdsUrl).port;
  const control = new URL(emulator.ready.controlUrl).port;
  let out = command
    .replace(/^npx forewarn\b/, 'forewarn')
    .replace(/(=\$\(cat [^)]*\)) npx forewarn\b/, '$1 forewarn')
    .replace(/\b(127\.0\.0\.1|localhost|emulator-host):8169\b/g, `127.0.0.1:${imds}`)
    .replace(/\b(127\.0\.0\.1|localhost|emulator-host):8170\b/g, `127.0.0.1:${control}`);
  // A live scenario run serves its own IMDS: on a free port, not on the emulator's.
  if (/^forewarn scenario run .*--clock system/.test(out) && !/--imds\b/.test(out)) out += ' --imds 127.0.0.1:0';
  for (const [placeholder, value] of PLACEHOLDERS) out = out.replaceAll(placeholder, value);
  return out;
}

async function runScript(
  script: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-c', script], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return outputOf(child);
}

test('every README shell command runs against the shipped examples and exits 0', { timeout: 240_000 }, async (t) => {
  const blocks = shBlocks(readFileSync(join(repo, 'README.md'), 'utf8'));
  assert.ok(blocks.length >= 8, `found ${blocks.length} sh blocks`);
  const all = blocks.flatMap((b) => b.commands);
  for (const command of Object.keys(LEFT_OUT))
    assert.ok(all.includes(command), `LEFT_OUT names "${command}", which the README no longer has`);
  for (const { command } of EXPECT)
    assert.ok(
      all.some((c) => c.includes(command)),
      `EXPECT names "${command}", which the README no longer has`,
    );
  for (const command of all)
    assert.doesNotMatch(command, /^forewarn\b/, `"${command}": in a clone the bin is not on PATH; write npx forewarn`);
  for (const block of blocks.filter((b) => !b.run)) {
    for (const command of block.commands) {
      assert.ok(
        command in LEFT_OUT,
        `README.md line ${block.line}: "${command}" is in a \`\`\`sh block that is not marked test, and not left out with a reason`,
      );
    }
  }

  const tmp = mkdtempSync(join(tmpdir(), 'forewarn-readme-cmds-'));
  const bin = join(tmp, 'bin');
  const home = join(tmp, 'home');
  mkdirSync(bin);
  mkdirSync(home);
  // `npx forewarn` in a clone runs the built bin; the test runs the current source instead, so it checks the code as it is now.
  const [node, argv] = cliCommand([]);
  writeFileSync(join(bin, 'forewarn'), `#!/bin/sh\nexec ${[node, ...argv].map((a) => JSON.stringify(a)).join(' ')} "$@"\n`);
  chmodSync(join(bin, 'forewarn'), 0o755);
  const base: Record<string, string | undefined> = { ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: home };
  for (const name of ['FOREWARN_ENDPOINT', 'FOREWARN_CONTROL', 'FOREWARN_TOKEN', 'FOREWARN_DEBUG']) delete base[name];

  let shared: SpawnedEmulator | undefined;
  const started: SpawnedEmulator[] = [];
  const start = async (command: string) => {
    const emulator = await spawnReady('bash', ['-c', emulatorArgs(command)], base);
    started.push(emulator);
    return emulator;
  };
  let ran = 0;
  try {
    for (const block of blocks.filter((b) => b.run)) {
      const commands = block.commands.filter((c) => !(c in LEFT_OUT));
      if (commands.length === 0) continue;
      // A block that starts an emulator has it to itself; the others share the default one (`npm start`'s), in order.
      let emulator: SpawnedEmulator | undefined;
      let segment: string[] = [];
      const flush = async () => {
        if (segment.length === 0) return;
        const target = emulator ?? (shared ??= await start('npx forewarn emulator'));
        const script = [
          'set -euo pipefail',
          'live_event() { curl -sf "$README_CONTROL/v1/events" | node -e \'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const e=JSON.parse(s).events.filter(e=>e.status==="Scheduled");if(!e.length)process.exit(1);console.log(e[e.length-1].id)})\'; }',
          'set -x',
          ...segment.map((c) => substitute(c, target)),
        ].join('\n');
        // FOREWARN_CONTROL stands for the default control URL (port 8170) that the commands leave implicit.
        const result = await runScript(script, {
          ...base,
          README_CONTROL: target.ready.controlUrl,
          FOREWARN_CONTROL: target.ready.controlUrl,
        });
        const where = `README.md block at line ${block.line}:\n${segment.join('\n')}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
        assert.equal(result.code, 0, where);
        for (const expect of EXPECT) {
          if (segment.some((c) => c.includes(expect.command))) assert.match(result.stdout, expect.output, `${expect.why}; ${where}`);
        }
        ran += segment.length;
        segment = [];
      };
      for (const command of commands) {
        if (isEmulator(command)) {
          await flush();
          if (emulator) assert.equal(await emulator.stop('SIGINT'), 0, `the emulator of the block at line ${block.line} stops with 0`);
          emulator = await start(command);
          ran++;
        } else {
          segment.push(command);
        }
      }
      await flush();
      if (emulator) {
        // A block may stop its own emulator (the --pidfile example): let it finish exiting first.
        if (emulator.child.exitCode === null) await Promise.race([once(emulator.child, 'exit'), delay(1_000)]);
        const code = emulator.child.exitCode ?? (await emulator.stop('SIGINT'));
        assert.equal(code, 0, `the emulator of the block at line ${block.line} stops with 0; stderr: ${emulator.stderr()}`);
      }
    }
  } finally {
    for (const emulator of started)
      if (emulator.child.exitCode === null && emulator.child.signalCode === null) await emulator.stop('SIGINT');
    rmSync(tmp, { recursive: true, force: true });
  }
  t.diagnostic(`ran ${ran} README commands; left out ${Object.keys(LEFT_OUT).length}`);
  assert.equal(ran + Object.keys(LEFT_OUT).length, all.length, 'every command either ran or is left out with a reason');
});
