// Node's nextTick objects keep their hidden class once the IMDS server is built, across full GCs.
// Without that, a full GC while no tick object is alive frees it and every request of the process
// then builds its tick objects through V8's runtime: 3-4 µs more CPU per request, measured by
// `npm run bench` (src/emulator/imds/tick-shape.ts says how).
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { executionAsyncResource } from 'node:async_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine } from '../../../src/emulator/engine/engine.js';
import { FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { buildImdsServer } from '../../../src/emulator/imds/server.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { pinnedTickObject } from '../../../src/emulator/imds/tick-shape.js';
import { T0 } from '../../support/imds-server.js';

setFlagsFromString('--allow-natives-syntax');
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
// Built at run time, after the flag: the parser takes V8's %-functions only then.
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** The object Node built for one nextTick: inside its callback, the execution resource. */
function tickObject(): Promise<object> {
  return new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())));
}

it('tick objects made after full GCs have the hidden class of the one the IMDS server pinned', async () => {
  const engine = new Engine({ clock: new ManualClock(T0), fleet: [{ name: 'vm0' }] });
  const app = buildImdsServer({ engine, faults: new FaultRegistry(), rateLimiter: new RateLimiter(0) });
  await app.ready();
  try {
    // Every tick queued so far has run; only a pinned tick object can outlive the GCs below.
    await new Promise((resolve) => setImmediate(resolve));
    const pinned = pinnedTickObject();
    assert.ok(pinned !== undefined, 'building the IMDS server pins a tick object');
    gc();
    gc();
    const later = await tickObject();
    assert.ok(haveSameMap(later, pinned), 'a tick object made after full GCs has a new hidden class');
    // A second server pins nothing more.
    const again = buildImdsServer({ engine, faults: new FaultRegistry(), rateLimiter: new RateLimiter(0) });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(pinnedTickObject(), pinned);
    await again.close();
  } finally {
    await app.close();
  }
});
