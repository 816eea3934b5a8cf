// Real impact with a toy HTTP server: a Freeze really stops it, a Reboot restarts the command Forewarn owns,
// a Terminate or Delete ends it for good, and pid 1, the emulator and missing pids are refused.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ControlApiError, type ProcessBinding } from '../../../src/control/index.js';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/index.js';
import { openSse } from '../../support/sse.js';
import { tempDir } from '../../support/temp.js';
import { waitFor } from '../../support/wait.js';

// Real impact is on only with a token (SPEC §4): every control request then carries it.
const TOKEN = 'impact-test-token';
const TOY = fileURLToPath(new URL('./fixtures/toy-server.mjs', import.meta.url));
const dir = tempDir('impact');
let files = 0;

/** A fresh file for a toy to write {pid, port} to. */
const portFile = () => join(dir, `toy-${++files}.json`);

function readToy(file: string): { pid: number; port: number } | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as { pid: number; port: number };
}

/** Waits until the toy writing `file` listens, and for a pid other than `not` (a restart). */
async function toyUp(file: string, not?: number): Promise<{ pid: number; port: number }> {
  return waitFor(`the toy to write ${file}`, () => {
    const toy = readToy(file);
    return toy !== undefined && toy.pid !== not && toy;
  });
}

/** The toy's answer (its pid), or undefined when none comes within `ms`. */
async function ask(port: number, ms = 300): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(ms) });
    return await res.text();
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Toys the tests start themselves (not Forewarn), killed at the end whatever happened. */
const foreign: ChildProcess[] = [];
after(() => {
  for (const child of foreign) child.kill('SIGKILL');
});

async function emulator(vms: object[] = [{ name: 'vm0' }]): Promise<EmulatorHandle> {
  return startEmulator({ clock: 'manual', fleet: { vms: vms as never }, impact: true, token: TOKEN });
}

async function bindToy(emu: EmulatorHandle, vm: string, extra: string[] = [], graceSeconds?: number) {
  const file = portFile();
  const binding = await emu.bindProcess(vm, {
    command: [process.execPath, TOY, file, ...extra],
    ...(graceSeconds !== undefined ? { graceSeconds } : {}),
  });
  return { binding, file, toy: await toyUp(file) };
}

/** The binding once `probe` holds for it. */
async function bindingWhen(emu: EmulatorHandle, vm: string, what: string, probe: (b: ProcessBinding) => boolean): Promise<ProcessBinding> {
  let last: ProcessBinding | undefined;
  return waitFor(
    () => `${what}; last: ${JSON.stringify(last)}`,
    async () => {
      last = await emu.processOf(vm);
      return probe(last) && last;
    },
  );
}

/** Creates the operation and approves its event at once, so it Starts now on the manual clock. */
async function startNow(emu: EmulatorHandle, type: 'freeze' | 'restart' | 'redeploy' | 'delete', vm: string, durationInSeconds?: number) {
  const created = await emu.trigger({ type, vms: [vm], ...(durationInSeconds !== undefined ? { durationInSeconds } : {}) });
  const [id] = created.events;
  assert.ok(id, `the ${type} made an event`);
  await emu.approve(id, vm);
  return id;
}

test('a Freeze really stops the bound command (no answer) and SIGCONT resumes it when the impact ends', async () => {
  await using emu = await emulator();
  const { binding, toy } = await bindToy(emu, 'vm0');
  assert.equal(binding.owned, true);
  assert.equal(binding.status, 'running');
  assert.equal(binding.pid, toy.pid);
  assert.equal(await ask(toy.port), String(toy.pid), 'the toy answers before the freeze');

  const stream = await openSse(`${emu.controlUrl}/v1/stream`, { authorization: `Bearer ${TOKEN}` });
  try {
    await startNow(emu, 'freeze', 'vm0', 30);
    assert.equal((await emu.vm('vm0')).state, 'frozen');
    const frame = await stream.sse.nextOf('impact');
    assert.equal(frame.data.vm, 'vm0');
    assert.equal(frame.data.action, 'stop');
    assert.equal(frame.data.signal, 'SIGSTOP');
    assert.equal(frame.data.pid, toy.pid);
    const stopped = await emu.processOf('vm0');
    assert.equal(stopped.status, 'stopped');
    assert.match(stopped.log.at(-1)!.detail, /SIGSTOP to the group\)/, 'an owned command leads its own group, which gets the signal');
    assert.equal(await ask(toy.port), undefined, 'a stopped toy answers nothing within 300 ms');

    await emu.advanceClock(31);
    assert.equal((await emu.vm('vm0')).state, 'running');
    assert.equal((await stream.sse.nextOf('impact')).data.signal, 'SIGCONT');
    await bindingWhen(emu, 'vm0', 'the toy to run again', (b) => b.status === 'running');
    assert.equal(await ask(toy.port, 2000), String(toy.pid), 'the same process answers again');
  } finally {
    stream.abort();
  }
});

test('a Reboot terminates the owned command and starts it again (a new pid that answers) once the VM runs', async () => {
  await using emu = await emulator();
  const { file, toy } = await bindToy(emu, 'vm0');
  await startNow(emu, 'restart', 'vm0');
  assert.equal((await emu.vm('vm0')).state, 'rebooting');
  await bindingWhen(emu, 'vm0', 'the toy to be down', (b) => b.status === 'down');
  await waitFor('the old toy to exit', () => !alive(toy.pid));
  assert.equal(await ask(toy.port), undefined);

  // The Reboot's impact (3 minutes at realistic timing) ends: the VM runs, and so does the command, anew.
  await emu.advanceClock(181);
  const again = await toyUp(file, toy.pid);
  const binding = await bindingWhen(emu, 'vm0', 'the toy to run again', (b) => b.status === 'running' && b.pid === again.pid);
  assert.notEqual(again.pid, toy.pid);
  assert.equal(await ask(again.port, 2000), String(again.pid));
  const actions = binding.log.map((e) => e.action);
  assert.deepEqual(actions, ['start', 'terminate', 'exit', 'start'], JSON.stringify(binding.log));
  assert.equal(binding.log[1]!.signal, 'SIGTERM');
});

test('a reboot that came and went within one clock advance still restarts the command', async () => {
  await using emu = await emulator();
  const { file, toy } = await bindToy(emu, 'vm0');
  const created = await emu.trigger({ type: 'restart', vms: ['vm0'] });
  // NotBefore, the whole impact and the event's end all pass in one step.
  await emu.advanceClock(60 * 60);
  assert.deepEqual(await emu.events(), [], `the event is over: ${created.events.join()}`);
  const again = await toyUp(file, toy.pid);
  assert.notEqual(again.pid, toy.pid);
  assert.equal(await ask(again.port, 2000), String(again.pid));
});

test('a command that ignores SIGTERM gets SIGKILL after its grace', async () => {
  await using emu = await emulator();
  const { toy } = await bindToy(emu, 'vm0', ['--ignore-term'], 0.3);
  await startNow(emu, 'restart', 'vm0');
  const binding = await bindingWhen(emu, 'vm0', 'SIGKILL', (b) => b.log.some((e) => e.signal === 'SIGKILL'));
  await waitFor('the toy to die', () => !alive(toy.pid));
  assert.deepEqual(
    binding.log.filter((e) => e.signal !== null).map((e) => e.signal),
    ['SIGTERM', 'SIGKILL'],
  );
});

test('a Terminate ends the command for good: no restart once the VM is gone', async () => {
  await using emu = await emulator([{ name: 'ss0', tenant: 'ss', tenantKind: 'scaleSet', terminateNotificationMinutes: 5 }]);
  const { toy } = await bindToy(emu, 'ss0');
  await startNow(emu, 'delete', 'ss0');
  assert.equal((await emu.vm('ss0')).state, 'deleting');
  await bindingWhen(emu, 'ss0', 'the toy to end', (b) => b.status === 'ended');
  await waitFor('the toy to exit', () => !alive(toy.pid));
  await emu.advanceClock(20 * 60);
  assert.equal((await emu.fleet()).vms.length, 0, 'the VM is deleted');
  const binding = await emu.processOf('ss0');
  assert.equal(binding.status, 'ended');
  assert.equal(binding.log.filter((e) => e.action === 'start').length, 1, 'started once, never again');
});

test('a Delete without notice (the VM leaves at once) ends the command too', async () => {
  await using emu = await emulator();
  const { toy } = await bindToy(emu, 'vm0');
  const created = await emu.trigger({ type: 'delete', vms: ['vm0'] });
  assert.deepEqual(created.removedVms, ['vm0']);
  await bindingWhen(emu, 'vm0', 'the toy to end', (b) => b.status === 'ended');
  await waitFor('the toy to exit', () => !alive(toy.pid));
  assert.equal((await emu.processOf('vm0')).log.at(-1)?.vmState, 'deleted');
});

test('pid 1, the emulator itself, a missing pid and a pid given twice over are refused with a 4xx naming the problem', async () => {
  await using emu = await emulator();
  const refusal = async (body: object, vm = 'vm0') => {
    const err = await emu.bindProcess(vm, body as never).then(
      () => assert.fail(`binding ${JSON.stringify(body)} should be refused`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ControlApiError, String(err));
    return err;
  };
  let err = await refusal({ pid: 1 });
  assert.equal(err.status, 400);
  assert.match(err.error, /pid 1 is init/);
  assert.equal(err.field, 'pid');

  err = await refusal({ pid: process.pid });
  assert.equal(err.status, 400);
  assert.match(err.error, new RegExp(`pid ${process.pid} is the emulator itself`));

  // Above any pid_max Linux allows by default (32768) and one below 2^22.
  err = await refusal({ pid: 4_194_303 });
  assert.equal(err.status, 400);
  assert.match(err.error, /no process has pid 4194303/);

  err = await refusal({ pid: 0 });
  assert.equal(err.status, 400);
  assert.match(err.error, /pid/);

  err = await refusal({ pid: 1234, command: ['true'] });
  assert.equal(err.status, 400);
  assert.match(err.error, /only one of pid, pidfile or command/);

  err = await refusal({ command: 'node server.js' });
  assert.equal(err.status, 400);
  assert.match(err.error, /command/);

  err = await refusal({ command: [join(dir, 'no-such-program')] });
  assert.equal(err.status, 400);
  assert.match(err.error, /cannot start/);

  err = await refusal({ pid: 1 }, 'nope');
  assert.equal(err.status, 404);

  err = await emu.processOf('vm0').then(
    () => assert.fail('vm0 is bound to nothing'),
    (e: unknown) => e as ControlApiError,
  );
  assert.equal(err.status, 404);
  assert.match(err.error, /bound to no process/);
});

test('a pidfile binding reads the pid; a foreign process is stopped and continued, never restarted, and left running on unbind', async () => {
  await using emu = await emulator();
  const file = portFile();
  const child = spawn(process.execPath, [TOY, file], { stdio: 'ignore' });
  foreign.push(child);
  const toy = await toyUp(file);
  const pidfile = join(dir, 'toy.pid');
  writeFileSync(pidfile, `${toy.pid}\n`);

  const binding = await emu.bindProcess('vm0', { pidfile });
  assert.equal(binding.kind, 'pidfile');
  assert.equal(binding.pid, toy.pid);
  assert.equal(binding.owned, false);

  await startNow(emu, 'freeze', 'vm0', 10);
  const stopped = await bindingWhen(emu, 'vm0', 'the toy to stop', (b) => b.status === 'stopped');
  assert.match(stopped.log.at(-1)!.detail, /SIGSTOP to the process\)/, 'a pid that does not lead its group gets the signal alone');
  assert.equal(await ask(toy.port), undefined);

  // Unbinding while it is stopped continues it: Forewarn never leaves a process it stopped stopped.
  const unbound = await emu.unbindProcess('vm0');
  assert.equal(unbound.status, 'running');
  assert.equal(await ask(toy.port, 2000), String(toy.pid));
  assert.ok(alive(toy.pid), 'a process Forewarn did not start is not terminated on unbind');

  const badPidfile = join(dir, 'bad.pid');
  writeFileSync(badPidfile, 'not a pid');
  const err = await emu.bindProcess('vm0', { pidfile: badPidfile }).then(
    () => assert.fail('a pidfile without a pid is refused'),
    (e: unknown) => e as ControlApiError,
  );
  assert.equal(err.status, 400);
  assert.match(err.error, /bad\.pid does not hold a pid/);
  assert.doesNotMatch(err.error, /not a pid"/, 'what the file holds is never quoted');
});

test('a Reboot terminates a bound pid Forewarn did not start, and does not start anything again', async () => {
  await using emu = await emulator();
  const file = portFile();
  const child = spawn(process.execPath, [TOY, file], { stdio: 'ignore' });
  foreign.push(child);
  const toy = await toyUp(file);
  await emu.bindProcess('vm0', { pid: toy.pid });
  await startNow(emu, 'restart', 'vm0');
  await waitFor('the toy to exit', () => !alive(toy.pid));
  await emu.advanceClock(181);
  const binding = await bindingWhen(emu, 'vm0', 'the binding to end', (b) => b.status === 'ended');
  assert.match(binding.log.at(-1)!.detail, /not started again: Forewarn did not start it/);
});

test('unbinding or closing the emulator stops the commands it owns: no orphans', async () => {
  const emu = await emulator([{ name: 'a' }, { name: 'b' }]);
  const a = await bindToy(emu, 'a');
  const b = await bindToy(emu, 'b');
  const unbound = await emu.unbindProcess('a');
  assert.equal(unbound.status, 'ended');
  assert.equal(alive(a.toy.pid), false);
  await emu.close();
  await waitFor('the owned toy to be gone after close', () => !alive(b.toy.pid));
});
