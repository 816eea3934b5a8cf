// Long-running commands (watch, record, replay) stop cleanly on the first SIGINT or SIGTERM.

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
