// Keeps one of Node's process.nextTick objects alive for the life of the process, so V8 never
// collects the hidden classes (maps) tick objects are built with.
//
// Why: Node builds each tick object with an object literal keyed by symbols first
// (internal/process/task_queues). Once a process has done enough start-up work to run a full GC
// (loading and readying the IMDS app does), a full GC while no tick object is alive frees those
// maps, and the request path's stream functions that inline nextTick (onwrite, emitReadable,
// endReadable) end up building every tick object through the V8 runtime, one map transition at a
// time: 3-4 µs more CPU per request (about +30% user time) in every node:http server of the
// process, fast path or not. A fresh process that never ran a full GC does not pay it; one live
// tick object keeps the maps, and with them the inline literal.
import { executionAsyncResource } from 'node:async_hooks';

let pinned: object | undefined;
let scheduled = false;

/**
 * Pins the tick objects' hidden classes for the rest of the process; call before serving the first
 * request (it takes effect on the next tick, before any I/O callback). Later calls do nothing.
 */
export function pinTickObjectShape(): void {
  if (scheduled) return;
  scheduled = true;
  // Inside a nextTick callback, the execution resource is that callback's own tick object.
  process.nextTick(() => {
    pinned = executionAsyncResource();
  });
}

/** The tick object pinned, once it is (tests compare hidden classes with it). */
export function pinnedTickObject(): object | undefined {
  return pinned;
}
