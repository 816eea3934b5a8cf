// Preloaded into every test file by scripts/run-tests.mjs: each test and hook without a `timeout` of its own
// gets FOREWARN_TEST_TIMEOUT_MS (60 s by default), so a stuck one fails under its own name and the file goes on.
// Node 20's --test-timeout cannot do this: it times each whole file, and names only the file.
// Suites (describe) get none: their tests are timed one by one, so a long suite of quick tests is fine.
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { Script } from 'node:vm';

export const DEFAULT_TIMEOUT_MS = 60_000;

const raw = process.env.FOREWARN_TEST_TIMEOUT_MS;
const timeoutMs = raw === undefined || raw === '' ? DEFAULT_TIMEOUT_MS : Number(raw);
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
  throw new Error(`FOREWARN_TEST_TIMEOUT_MS must be a whole number of milliseconds above 0, got ${JSON.stringify(raw)}`);
}

/**
 * node:test records where each test and hook was declared as the place its caller stands, which would be
 * the wrapper below. So the wrapper calls through a one-line relay compiled at the declaring file's
 * name, line and column: reports keep pointing at the test.
 */
const relays = new Map();
function relayFor(wrapper) {
  const prepare = Error.prepareStackTrace;
  const holder = {};
  try {
    Error.prepareStackTrace = (_, sites) => sites;
    Error.captureStackTrace(holder, wrapper);
    const site = holder.stack[0];
    const file = site?.getScriptNameOrSourceURL();
    const line = site?.getLineNumber();
    const column = site?.getColumnNumber();
    if (!file || !line || !column) return (f, args) => f(...args);
    const key = `${file}:${line}:${column}`;
    let relay = relays.get(key);
    if (!relay) {
      relay = new Script(`(f, args) =>\n${' '.repeat(column - 1)}f(...args)`, { filename: file, lineOffset: line - 2 }).runInThisContext();
      relays.set(key, relay);
    }
    return relay;
  } finally {
    Error.prepareStackTrace = prepare;
  }
}

/** test(name?, options?, fn?) with `timeout` added to the options unless they give one. */
function withTimeout(original) {
  const wrapper = (...args) => {
    const at = args.findIndex((a) => typeof a === 'object' && a !== null);
    if (at >= 0) args[at] = { timeout: timeoutMs, ...args[at] };
    else args.splice(typeof args[0] === 'string' ? 1 : 0, 0, { timeout: timeoutMs });
    return relayFor(wrapper)(original, args);
  };
  for (const variant of ['skip', 'todo', 'only'])
    if (typeof original[variant] === 'function') wrapper[variant] = withTimeout(original[variant]);
  return wrapper;
}

/** before(fn, options?) and the like. */
function hookWithTimeout(original) {
  const wrapper = (fn, options) => relayFor(wrapper)(original, [fn, { timeout: timeoutMs, ...options }]);
  return wrapper;
}

const nodeTest = createRequire(import.meta.url)('node:test');
nodeTest.test = withTimeout(nodeTest.test);
nodeTest.it = withTimeout(nodeTest.it);
for (const hook of ['before', 'after', 'beforeEach', 'afterEach']) nodeTest[hook] = hookWithTimeout(nodeTest[hook]);
syncBuiltinESMExports();
