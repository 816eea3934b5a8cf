// Long-running commands (watch, record, replay) stop cleanly on the first SIGINT or SIGTERM; the agent
// and the controller give running actions a grace.
import { CliError } from './errors.js';

/** Runs `run` with a signal that aborts on SIGINT or SIGTERM; the handlers go when it ends. */
export async function untilStopped<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await run(controller.signal);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** A daemon the first signal stops gracefully and a second hurries: the agent, the controller. */
export interface Daemon {
  run(): Promise<void>;
  stop(): void;
  abortActions(): void;
}

/**
 * Runs `daemon` until it stops. First SIGINT/SIGTERM: stop taking events and let running actions
 * finish within the grace; a second: abort them now. A start-up failure leaves as a CliError.
 */
export async function runDaemon(
  daemon: Daemon,
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void; fatal(o: object, m: string): void },
  what: string,
): Promise<void> {
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      logger.info({ signal: name }, 'shutting down');
      daemon.stop();
    } else {
      logger.warn({ signal: name }, 'second signal: aborting running actions now');
      daemon.abortActions();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await daemon.run();
  } catch (err) {
    logger.fatal({ err }, `the ${what} could not start`);
    throw new CliError((err as Error).message);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
