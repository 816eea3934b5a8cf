// The CLI starts the emulator through the library: its exit codes and messages for a bad state file and a port in use stay as they were.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseEmulatorOptions, startEmulator as startFromCli } from '../../src/cli/emulator.js';
import { CliError, UsageError } from '../../src/cli/errors.js';
import { startEmulator } from '../../src/emulator/index.js';
import { captureIo } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

const dir = tempDir('cli-lib');

const flags = { imds: '127.0.0.1:0', control: '127.0.0.1:0', logLevel: 'silent' };

test('the CLI hands back the library handle, whose control operations reach the emulator it announced', async () => {
  const io = captureIo();
  const { handle, emulator, controlUrl } = await startFromCli(parseEmulatorOptions({ ...flags, clock: 'manual' }), io);
  try {
    assert.equal(handle.emulator, emulator);
    assert.equal(handle.controlUrl, controlUrl);
    assert.ok(io.out.includes(controlUrl), io.out);
    await handle.trigger({ type: 'freeze', vms: ['vm0'] });
    assert.equal(emulator.engine.events().length, 1);
  } finally {
    await handle.close();
  }
});

test('a state file that cannot be read is a usage error (exit 2) with the state file message', async () => {
  const state = join(dir, 'broken.json');
  writeFileSync(state, '{ not json');
  await assert.rejects(startFromCli(parseEmulatorOptions({ ...flags, state }), captureIo()), (err: unknown) => {
    assert.ok(err instanceof UsageError, String(err));
    assert.ok(err.message.startsWith(state), err.message);
    assert.doesNotMatch(err.message, /options\.state/);
    return true;
  });
});

test('a port in use is a run-time error (exit 1) naming the address', async () => {
  await using other = await startEmulator();
  const port = Number(new URL(other.controlUrl).port);
  await assert.rejects(startFromCli(parseEmulatorOptions({ ...flags, control: `127.0.0.1:${port}` }), captureIo()), (err: unknown) => {
    assert.ok(err instanceof CliError && !(err instanceof UsageError), String(err));
    assert.equal(err.message, `cannot listen on 127.0.0.1:${port}: the address is already in use (is another emulator running?)`);
    return true;
  });
});
