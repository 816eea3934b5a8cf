// `forewarn/emulator`: the emulator in-process, for test suites. The CLI starts it through launchEmulator too.
import { ControlClient } from '../control/client.js';
import { Emulator } from './emulator.js';
import { EngineError } from './engine/errors.js';
import { EmulatorOptionError, resolveStartOptions, type LaunchOptions, type StartEmulatorOptions } from './library-options.js';
import { StateFileError } from './state/file.js';

/**
 * A running emulator: its URLs, the control API's operations (it is a ControlClient on its own
 * control URL), and close(). `await using emu = await startEmulator()` closes it at the block's end.
 */
export class EmulatorHandle extends ControlClient implements AsyncDisposable {
  constructor(
    /** The runtime itself, for what the control API does not offer. */
    readonly emulator: Emulator,
    readonly imdsUrl: string,
    readonly controlUrl: string,
    token: string | undefined,
  ) {
    super({ baseUrl: controlUrl, token });
  }

  /** The IMDS endpoint one VM of the fleet reaches, for ScheduledEventsClient's `endpoint`. [choice] An unknown VM throws, not a URL that 404s. */
  vmUrl(name: string): string {
    if (!this.emulator.engine.fleet.vms.has(name)) throw new RangeError(`no VM named ${JSON.stringify(name)} in the fleet`);
    return `${this.imdsUrl}/vms/${encodeURIComponent(name)}`;
  }

  /** Stops both servers and saves the state file, if any. Safe to call twice. */
  close(): Promise<void> {
    return this.emulator.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Starts an emulator on free loopback ports (unless told otherwise); bad options throw EmulatorOptionError. */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<EmulatorHandle> {
  return launchEmulator(resolveStartOptions(options));
}

/** Creates and starts the emulator from checked options; a listen error (EADDRINUSE…) is thrown as is, after cleaning up. */
export async function launchEmulator(launch: LaunchOptions): Promise<EmulatorHandle> {
  let emulator: Emulator;
  try {
    emulator = await Emulator.create(launch.emulator);
  } catch (err) {
    if (err instanceof StateFileError) throw new EmulatorOptionError('state', err.message, { cause: err });
    // The engine's own rules for a fleet (a tenant's fault domains and so on).
    if (err instanceof EngineError) throw new EmulatorOptionError('fleet', err.message, { cause: err });
    throw err;
  }
  let urls: { imdsUrl: string; controlUrl: string };
  try {
    urls = await emulator.listen(launch.listen);
  } catch (err) {
    await emulator.close();
    throw err;
  }
  return new EmulatorHandle(emulator, urls.imdsUrl, urls.controlUrl, launch.emulator.token);
}
