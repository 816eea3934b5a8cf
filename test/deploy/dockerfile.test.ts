// The Dockerfile, checked without a Docker engine (none runs on the project's machines;
// .ci/docker-build builds both images and starts them where one does). Its last stage is the agent's
// image, the default target; the `emulator` target is the emulator's.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Instruction {
  line: number;
  op: string;
  args: string;
}

interface Stage {
  name: string | null;
  image: string;
  instructions: Instruction[];
}

/** Instructions with their first line; continuation lines joined, comments and blank lines dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let start = 0;
  let joined: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    // Comments and blank lines are dropped, even between continuation lines, as Docker does.
    if (line.startsWith('#') || line === '') continue;
    if (joined === null) start = i + 1;
    const full: string = joined === null ? line : `${joined} ${line}`;
    if (full.endsWith('\\')) {
      joined = full.slice(0, -1).trimEnd();
      continue;
    }
    joined = null;
    const match = /^([A-Za-z]+)\s*(.*)$/.exec(full);
    if (!match) throw new Error(`Dockerfile:${start}: not an instruction: ${full}`);
    out.push({ line: start, op: match[1]!.toUpperCase(), args: match[2]!.trim() });
  }
  if (joined !== null) throw new Error(`Dockerfile:${start}: the file ends inside a continued instruction`);
  return out;
}

function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const match = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!match) throw new Error(`Dockerfile:${ins.line}: FROM ${ins.args} is not IMAGE [AS NAME]`);
      stages.push({ image: match[1]!, name: match[2] ?? null, instructions: [] });
    } else if (stages.length === 0) {
      if (ins.op !== 'ARG') throw new Error(`Dockerfile:${ins.line}: ${ins.op} before the first FROM`);
    } else {
      stages.at(-1)!.instructions.push(ins);
    }
  }
  return stages;
}

/** An instruction's exec form (a JSON array), or a failure naming its line. */
function execForm(ins: Instruction): string[] {
  try {
    const value: unknown = JSON.parse(ins.args);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  } catch {
    // Reported below.
  }
  return assert.fail(`Dockerfile:${ins.line}: ${ins.op} must be in exec form (a JSON array of strings), got ${ins.args}`);
}

interface Copy {
  line: number;
  from: string | null;
  sources: string[];
  dest: string;
}

function copiesOf(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.op === 'COPY' || i.op === 'ADD')
    .map((ins) => {
      const words = ins.args.startsWith('[') ? execForm(ins) : ins.args.split(/\s+/);
      const flags = words.filter((w) => w.startsWith('--'));
      const paths = words.filter((w) => !w.startsWith('--'));
      assert.ok(paths.length >= 2, `Dockerfile:${ins.line}: ${ins.op} needs a source and a destination`);
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null;
      return { line: ins.line, from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
    });
}

/** The stage's working directory after its instructions (absolute). */
function workdirOf(stage: Stage): string {
  let dir = '/';
  for (const i of stage.instructions) if (i.op === 'WORKDIR') dir = posix.resolve(dir, i.args);
  return dir;
}

/** Where a COPY puts a source inside the image: into a directory destination (ending in /, or several sources) by name. */
function copiedTo(copy: Copy, source: string, workdir: string): string {
  const dest = posix.resolve(workdir, copy.dest);
  const intoDir = copy.dest.endsWith('/') || copy.dest === '.' || copy.sources.length > 1;
  return intoDir ? posix.join(dest, posix.basename(source)) : dest;
}

/** .dockerignore's patterns, in order; a later `!` pattern takes a path back. */
function ignored(path: string, patterns: string[]): boolean {
  const toRegex = (p: string) =>
    new RegExp(
      `^${p
        .replace(/^\/+|\/+$/g, '')
        .split('**')
        .map((part) =>
          part
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('.*')}(/.*)?$`,
    );
  let out = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    if (toRegex(negated ? pattern.slice(1) : pattern).test(path)) out = !negated;
  }
  return out;
}

interface Package {
  bin: Record<string, string>;
  engines: { node: string };
  scripts: Record<string, string>;
  workspaces?: string[];
}

function readJsonc(path: string): { compilerOptions?: { rootDir?: string; outDir?: string } } {
  // tsconfig files may hold // comments.
  return JSON.parse(
    readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => !l.trim().startsWith('//'))
      .join('\n'),
  ) as { compilerOptions?: { rootDir?: string; outDir?: string } };
}

const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = stagesOf(parseDockerfile(text));
const final = stages.at(-1)!;
const emulator = stages.find((s) => s.name === 'emulator') ?? assert.fail('no stage named emulator (docker build --target emulator)');
/** The stages an image is made of: the emulator's and the agent's (the default). */
const images = [emulator, final];
/** npm lifecycle scripts `npm ci` runs in the package itself. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare', 'dependencies'];
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { optional?: boolean; dev?: boolean; devOptional?: boolean }>;
};
const peers = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependenciesMeta?: object }).peerDependenciesMeta ?? {},
);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Package;
const dockerignore = existsSync(join(ROOT, '.dockerignore'))
  ? readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
  : [];

/** What `npm run build` writes, relative to the package root: the main build's outDir and each workspace's. */
function buildOutputs(): string[] {
  const build = pkg.scripts.build ?? assert.fail('package.json has no build script');
  const outputs: string[] = [];
  const main = /tsc -p (\S+)/.exec(build)?.[1] ?? assert.fail(`the build script runs no tsc -p: ${build}`);
  outputs.push(posix.normalize(readJsonc(join(ROOT, main)).compilerOptions?.outDir ?? assert.fail(`${main} sets no outDir`)));
  for (const [, ws] of build.matchAll(/npm run build -w (\S+)/g)) {
    const dir = (pkg.workspaces ?? []).find((w) => {
      const manifest = JSON.parse(readFileSync(join(ROOT, w, 'package.json'), 'utf8')) as { name: string };
      return manifest.name === ws;
    });
    assert.ok(dir, `the build builds workspace ${ws}, which package.json's workspaces do not list`);
    const outDir =
      readJsonc(join(ROOT, dir, 'tsconfig.json')).compilerOptions?.outDir ?? assert.fail(`${dir}/tsconfig.json sets no outDir`);
    outputs.push(posix.join(dir, outDir));
  }
  return outputs;
}

describe('Dockerfile', () => {
  it('builds in one stage and runs in another, both on Node 20, which package.json’s engines admits', () => {
    assert.ok(stages.length >= 2, `a multi-stage build (found ${stages.length} stage)`);
    for (const s of stages)
      assert.match(s.image, /^node:20-bookworm-slim(@sha256:[0-9a-f]{64})?$/, `stage ${s.name ?? '(unnamed)'}: Node 20`);
    // The node:20 tag follows the newest 20.x, so a `>=20.x` floor is met.
    const min = /^>=(\d+)\./.exec(pkg.engines.node)?.[1];
    assert.ok(min !== undefined && Number(min) <= 20, `engines.node ${pkg.engines.node} admits Node 20`);
    const builds = (s: Stage) => s.instructions.some((i) => i.op === 'RUN' && /npm run build/.test(i.args));
    assert.ok(stages.slice(0, -1).some(builds), 'a build stage runs npm run build');
    assert.ok(!builds(final), 'the runtime stage does not build (it has no dev dependencies)');
  });

  it('runs as a numeric non-root user, the one the DaemonSet names', () => {
    const user =
      final.instructions.filter((i) => i.op === 'USER').at(-1)?.args ?? assert.fail('the runtime stage sets no USER: it would run as root');
    const uid = user.split(':')[0]!;
    assert.notEqual(uid, 'root');
    assert.match(uid, /^[1-9]\d*$/, 'a uid by number, so the kubelet can check runAsNonRoot');
    const ds = parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'kubernetes', 'daemonset.yaml'), 'utf8'))[0]!.toJS() as {
      spec: { template: { spec: { containers: { name: string; securityContext?: { runAsUser?: number } }[] } } };
    };
    const agent = ds.spec.template.spec.containers.find((c) => c.name === 'agent');
    assert.equal(String(agent?.securityContext?.runAsUser), uid);
  });

  it('copies from the build context only what exists there and .dockerignore lets through', () => {
    for (const stage of stages) {
      for (const copy of copiesOf(stage).filter((c) => c.from === null)) {
        for (const source of copy.sources) {
          assert.ok(existsSync(join(ROOT, source)), `Dockerfile:${copy.line}: ${source} is not in the repository`);
          assert.ok(
            !ignored(posix.normalize(source), dockerignore),
            `Dockerfile:${copy.line}: .dockerignore leaves ${source} out of the context`,
          );
        }
      }
    }
  });

  it('copies from a build stage only what that stage copied in or `npm run build` wrote there', () => {
    for (const copy of images.flatMap((image) => copiesOf(image)).filter((c) => c.from !== null)) {
      const from = stages.find((s) => s.name === copy.from) ?? assert.fail(`Dockerfile:${copy.line}: no stage named ${copy.from}`);
      assert.ok(!images.includes(from), `Dockerfile:${copy.line}: copies from another image's stage`);
      const workdir = workdirOf(from);
      const present = [
        ...copiesOf(from).flatMap((c) => c.sources.map((s) => copiedTo(c, s, workdirOf(from)))),
        ...buildOutputs().map((o) => posix.join(workdir, o)),
      ];
      for (const source of copy.sources) {
        const path = posix.resolve(workdir, source);
        assert.ok(
          present.some((p) => path === p || path.startsWith(`${p}/`)),
          `Dockerfile:${copy.line}: ${source} is not in stage ${copy.from} (it has ${present.join(', ')})`,
        );
      }
    }
  });

  it('installs without install scripts, since the build script would run too early; production dependencies only at run time', () => {
    const installs = stages.flatMap((s) =>
      s.instructions.filter((i) => i.op === 'RUN' && /\bnpm (ci|install)\b/.test(i.args)).map((i) => ({ s, i })),
    );
    assert.ok(installs.length >= 3);
    const scripts = INSTALL_SCRIPTS.filter((name) => pkg.scripts[name] !== undefined);
    for (const { i } of installs) {
      if (scripts.length > 0) assert.match(i.args, /--ignore-scripts/, `Dockerfile:${i.line}: npm would run ${scripts.join(', ')}`);
    }
    for (const image of images) {
      const runtime = installs.filter(({ s }) => s === image);
      assert.equal(runtime.length, 1, `stage ${image.name}: one install`);
      assert.match(runtime[0]!.i.args, /npm ci --omit=dev/, `stage ${image.name}: from the lockfile, without dev dependencies`);
    }
  });

  it('the agent image has the optional peers (Kubernetes, etcd, Azure); the emulator image none of them', () => {
    assert.ok(peers.length > 0, 'package.json declares optional peers');
    // The agent-image workspace lists them as optionalDependencies, so the lockfile marks them optional, not dev.
    for (const peer of peers) {
      const entry = lock.packages[`node_modules/${peer}`] ?? assert.fail(`${peer} is not in package-lock.json`);
      assert.equal(entry.optional, true, `${peer} is optional in the lockfile`);
      assert.notEqual(entry.dev, true, `${peer} is not a dev dependency in the lockfile`);
    }
    const install = (image: Stage) => image.instructions.find((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args))!.args;
    assert.doesNotMatch(install(final), /--omit=optional/, 'the agent image installs the optional peers');
    assert.match(install(emulator), /--omit=optional/, 'the emulator image leaves them out');
    const workdir = workdirOf(final);
    const has = copiesOf(final).flatMap((c) => c.sources.map((s) => copiedTo(c, s, workdir)));
    assert.ok(has.includes(posix.join(workdir, 'deploy/agent-image/package.json')), 'the agent stage copies the workspace that lists them');
  });

  it('the emulator image: `forewarn emulator` as a non-root user, both servers on 0.0.0.0 at the ports it exposes', () => {
    const entrypoint = execForm(emulator.instructions.filter((i) => i.op === 'ENTRYPOINT').at(-1) ?? assert.fail('no ENTRYPOINT'));
    const script = entrypoint.find((a) => a.endsWith('.js')) ?? assert.fail(`the ENTRYPOINT runs no script: ${JSON.stringify(entrypoint)}`);
    assert.equal(script, posix.join(workdirOf(emulator), pkg.bin.forewarn!));
    assert.equal(entrypoint[entrypoint.indexOf(script) + 1], 'emulator');
    const cmd = execForm(emulator.instructions.filter((i) => i.op === 'CMD').at(-1) ?? assert.fail('no CMD'));
    const at = (flag: string) => cmd[cmd.indexOf(flag) + 1];
    assert.equal(at('--imds'), '0.0.0.0:8169');
    assert.equal(at('--control'), '0.0.0.0:8170');
    const exposed = emulator.instructions.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    assert.deepEqual(exposed.sort(), ['8169', '8170']);
    const user = emulator.instructions.filter((i) => i.op === 'USER').at(-1)?.args ?? assert.fail('the emulator stage sets no USER');
    assert.match(user.split(':')[0]!, /^[1-9]\d*$/);
  });

  it('gives each image what the CLI reads beside its code: package.json, dist (with the dashboard), the client workspace, scenarios', () => {
    for (const image of images) {
      const workdir = workdirOf(image);
      const has = copiesOf(image).flatMap((c) => c.sources.map((s) => copiedTo(c, s, workdir)));
      // program.ts reads ../../package.json for --version; the emulator finds dist/dashboard and ../scenarios from its modules.
      for (const path of [
        'package.json',
        'package-lock.json',
        'dist',
        'scenarios',
        'packages/client/package.json',
        'packages/client/dist',
      ]) {
        assert.ok(has.includes(posix.join(workdir, path)), `stage ${image.name} copies ${path} to ${posix.join(workdir, path)}`);
      }
    }
  });

  it('starts `forewarn agent` from the script `npm run build` writes, with the ConfigMap’s path as default arguments', () => {
    const entrypoint = execForm(final.instructions.filter((i) => i.op === 'ENTRYPOINT').at(-1) ?? assert.fail('no ENTRYPOINT'));
    const script = entrypoint.find((a) => a.endsWith('.js')) ?? assert.fail(`the ENTRYPOINT runs no script: ${JSON.stringify(entrypoint)}`);
    assert.equal(entrypoint[entrypoint.indexOf(script) - 1], 'node');
    assert.equal(entrypoint[entrypoint.indexOf(script) + 1], 'agent');
    // The package's bin, at the runtime stage's working directory.
    const bin = pkg.bin.forewarn ?? assert.fail('package.json has no forewarn bin');
    assert.equal(script, posix.join(workdirOf(final), bin));
    // And the build writes the bin: src/cli/main.ts compiled from rootDir into outDir.
    const main = /tsc -p (\S+)/.exec(pkg.scripts.build!)![1]!;
    const options = readJsonc(join(ROOT, main)).compilerOptions ?? {};
    const source = posix.join(options.rootDir ?? '.', posix.relative(options.outDir ?? '.', bin)).replace(/\.js$/, '.ts');
    assert.ok(existsSync(join(ROOT, source)), `the bin ${bin} is compiled from ${source}, which exists`);
    // tini, as PID 1, is installed in the runtime stage.
    if (entrypoint[0] === '/usr/bin/tini')
      assert.ok(final.instructions.some((i) => i.op === 'RUN' && /apt-get install .*\btini\b/.test(i.args)));
    const cmd = execForm(final.instructions.filter((i) => i.op === 'CMD').at(-1) ?? assert.fail('no CMD'));
    assert.deepEqual(cmd, ['--config', '/etc/forewarn/agent.yaml']);
  });

  it('reads a Dockerfile as Docker does: continuations joined, comments skipped, a bad line named', () => {
    assert.deepEqual(parseDockerfile('FROM a AS b\n# note\nRUN x \\\n  # inside\n\n  && y\n'), [
      { line: 1, op: 'FROM', args: 'a AS b' },
      { line: 3, op: 'RUN', args: 'x && y' },
    ]);
    assert.throws(() => parseDockerfile('FROM a\n!!\n'), /Dockerfile:2: not an instruction/);
    assert.throws(() => parseDockerfile('FROM a\nRUN x \\\n'), /Dockerfile:2: the file ends inside a continued instruction/);
    assert.ok(ignored('dist/cli/main.js', ['dist']) && !ignored('distx', ['dist']) && ignored('packages/client/dist', ['packages/*/dist']));
    assert.ok(!ignored('a.log', ['*.log', '!a.log']));
  });
});
