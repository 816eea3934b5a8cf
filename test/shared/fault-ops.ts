// A FileOps that fails, writes short or lies at a chosen call, so every failure branch of the
// durable writers runs without a full disk; every other call goes to the real file system.
import type { FileOps } from '../../src/shared/atomic-file.js';

type Op = keyof FileOps;
type Fn<K extends Op> = FileOps[K] extends (...args: infer A) => infer R ? (...args: A) => R : never;

/** Called instead of the real op; `n` counts calls of this op from 1, `real` is the op beneath. */
export type Hook<K extends Op> = (n: number, real: Fn<K>, ...args: Parameters<Fn<K>>) => ReturnType<Fn<K>>;
export type Hooks = { [K in Op]?: Hook<K> };

export interface FaultyOps {
  ops: FileOps;
  /** Every call in order, as `op` or `op path` for the calls that take one. */
  calls: string[];
  count(op: Op): number;
}

export function withFaults(base: FileOps, hooks: Hooks): FaultyOps {
  const counts = new Map<Op, number>();
  const calls: string[] = [];
  const wrap = <K extends Op>(op: K): Fn<K> => {
    const real = base[op].bind(base) as Fn<K>;
    const hook = hooks[op] as Hook<K> | undefined;
    return ((...args: Parameters<Fn<K>>) => {
      const n = (counts.get(op) ?? 0) + 1;
      counts.set(op, n);
      calls.push(typeof args[0] === 'string' ? `${op} ${args[0]}` : op);
      return hook ? hook(n, real, ...args) : real(...args);
    }) as Fn<K>;
  };
  const ops: FileOps = {
    openSync: wrap('openSync'),
    writeSync: wrap('writeSync'),
    fsyncSync: wrap('fsyncSync'),
    fstatSync: wrap('fstatSync'),
    ftruncateSync: wrap('ftruncateSync'),
    closeSync: wrap('closeSync'),
    renameSync: wrap('renameSync'),
    unlinkSync: wrap('unlinkSync'),
    readdirSync: wrap('readdirSync'),
  };
  return { ops, calls, count: (op) => counts.get(op) ?? 0 };
}

/** An error as node:fs throws it. */
export function errno(code: string, syscall = 'write'): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected failure, ${syscall}`), { code, syscall });
}

/** A writeSync hook: the real write, cut to at most `max` bytes (what a nearly full disk does). */
export function shortWrite(max: number): Hook<'writeSync'> {
  return (_n, real, fd, buffer, offset, length, position) => real(fd, buffer, offset, Math.min(length, max), position);
}
