// A command's failure may quote what an endpoint or a file held; the CLI prints its message as it
// is (src/cli/program.ts), so `record` and `replay` escape it on its way out.
import { printable } from '../shared/printable.js';

/** Runs `work`; an Error it throws leaves with its message escaped, its class (and so its exit code) unchanged. */
export async function withPrintableErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof Error) err.message = printable(err.message);
    throw err;
  }
}
