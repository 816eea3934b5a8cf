// The FleetStore on etcd v3. A group's keys live under /forewarn/<group>/:
//   holders/<claim>/<vm>   one VM's share of a slot, on its session lease: {vm, claim, slot, since}
//   fence                  rewritten by every take, so reading the holders and taking is one compare-and-swap
//   members/<vm>           the registry, on no lease (membership is permanent): {vm, registeredAt}
//   prepared/<event>/<vm>  on the session lease, so a dead agent's marks go with it
// etcd has no slot objects: the slots in use are the distinct claims among the holders. A slot's name,
// `slots/<i>` as azure-blob.ts names them, is the lowest index free when its claim first took it, kept
// in each share's value and copied by a VM joining the claim: stable while the claim holds it, and a
// freed index goes to the next claim, as the contract expects of numbered slots.
// Each store has one session lease (TTL leaseSeconds), kept alive by etcd3 in the background every
// TTL/3 and by each renew(). Once it is lost (expired, or etcd3 gave up after 2×TTL without an answer)
// the next call that needs one grants another, and renew() moves a share still there onto it. close() stops the
// keep-alives without revoking: a dead or restarted agent keeps its slot until leaseSeconds pass.
// etcd renews every lease by its full TTL when a leader is elected, also after the whole cluster
// restarts, so neither an election nor an outage expires a held slot by itself.
import { Etcd3, EtcdLeaseInvalidError, isRecoverableError, type IKeyValue, type IOptions, type IRequestOp } from 'etcd3';
import type { Lease } from 'etcd3';
import { monotonicMs, wallClock } from '../../shared/clock.js';
import { StoreError, type Claim, type FleetStore, type Member, type StoreOptions } from './store.js';

export interface EtcdStoreOptions extends StoreOptions {
  /** Client URLs of the cluster's members, e.g. http://10.0.0.4:2379 (the config takes no https:// yet). */
  endpoints: string[];
  /** Timestamps written into values (since, registeredAt); the wall clock by default. */
  now?: () => number;
}

/** Conflicting takes (another agent wrote the fence between our read and write) before giving up. */
const MAX_CONFLICTS = 10;
/** How long a member that failed is skipped while another one may answer. */
const HOST_REST_MS = 1_000;

interface Holder {
  vm: string;
  claim: string;
  slot: number;
  since: string;
}

interface Session {
  lease: Lease;
  id: Promise<string>;
}

/** Gives up on a request; see EtcdStore. */
interface Deadline {
  readonly end: number;
  expired: boolean;
  /** The last transient failure, named when time runs out. */
  last: unknown;
}

export class EtcdStore implements FleetStore {
  readonly backend = 'etcd' as const;
  readonly options: EtcdStoreOptions;
  readonly where: string;
  readonly #client: Etcd3;
  readonly #now: () => number;
  readonly #ttl: number;
  readonly #root: string;
  readonly #vm: string;
  readonly #attemptMs: number;
  #session: Session | null = null;
  /** Events this store marked prepared: put again on a new lease once the one they were on is lost. */
  readonly #marked = new Set<string>();
  #marksLease: string | null = null;
  #closed = false;

  constructor(options: EtcdStoreOptions) {
    if (options.endpoints.length === 0) throw new RangeError('etcd: no endpoints');
    if (!Number.isInteger(options.slots) || options.slots < 1)
      throw new RangeError(`etcd: slots must be a positive integer, not ${options.slots}`);
    if (!(options.leaseSeconds > 0)) throw new RangeError(`etcd: leaseSeconds must be positive, not ${options.leaseSeconds}`);
    if (!(options.requestTimeoutMs > 0)) throw new RangeError(`etcd: requestTimeoutMs must be positive, not ${options.requestTimeoutMs}`);
    this.options = options;
    this.where = options.endpoints.join(',');
    this.#now = options.now ?? wallClock;
    // etcd takes whole seconds, and raises a TTL below its minimum (1.5 election timeouts) to it.
    this.#ttl = Math.max(1, Math.ceil(options.leaseSeconds));
    this.#root = `/forewarn/${segment(options.group)}/`;
    this.#vm = options.vm.toLowerCase();
    // Each attempt gets part of the request's time, so a member that hangs leaves time to ask
    // another; the request as a whole is bounded in #run. Streams (the keep-alive) get no deadline.
    const attemptMs = Math.max(200, Math.floor(options.requestTimeoutMs / 2));
    this.#attemptMs = attemptMs;
    const hosts = new RestingHosts(HOST_REST_MS);
    const clientOptions: IOptions = {
      hosts: options.endpoints,
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: wallClock() + attemptMs }),
      // etcd3's default breaker shuts a member out for 5 s after three failures, all of them at
      // once after an outage: longer than a short lease survives a restart without keep-alives.
      faultHandling: { host: (host) => hosts.policy(host) },
    };
    this.#client = new Etcd3(clientOptions);
  }

  async open(): Promise<void> {
    // A linearizable read: it needs a quorum with a leader, not just a member that answers.
    await this.#run('open', async () => {
      await this.#client.kv.range({ key: bytes(this.#fence()), count_only: true });
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Passively: the lease, and the slots on it, outlive this process by leaseSeconds.
    this.#session?.lease.release();
    this.#session = null;
    this.#client.close();
  }

  async tryAcquire(claim: Claim): Promise<string | null> {
    const key = this.#holderKey(claim);
    return this.#run(`tryAcquire ${claim}`, async (deadline) => {
      for (let conflict = 0; conflict < MAX_CONFLICTS; conflict++) {
        const taken = await this.#withLease(async (lease) => {
          const read = await this.#client.kv.range({ key: bytes(this.#holders()), range_end: prefixEnd(this.#holders()) });
          const holders = read.kvs.map((kv) => this.#parseHolder(kv));
          const mine = read.kvs.find((kv) => kv.key.toString() === key);
          const held = mine && this.#parseHolder(mine);
          // Already ours, on the lease kept alive: nothing to write.
          if (mine && held?.slot != null && mine.lease === lease) return slotName(held.slot);
          const slot = pickSlot(normalize(claim), holders, this.options.slots);
          if (slot === null) return null;
          const value: Holder = {
            vm: this.options.vm,
            claim: normalize(claim),
            slot,
            since: held?.since ?? new Date(this.#now()).toISOString(),
          };
          checkTime(deadline);
          // Nobody took or joined a slot since our read (revision R) iff the fence is unchanged since R.
          const txn = await this.#client.kv.txn({
            compare: [
              { key: bytes(this.#fence()), target: 'Mod', result: 'Less', mod_revision: String(BigInt(read.header.revision) + 1n) },
            ],
            success: [put(this.#fence(), { vm: this.options.vm, claim: value.claim, at: value.since }), put(key, value, lease)],
            failure: [],
          });
          return txn.succeeded ? slotName(slot) : CONFLICT;
        });
        if (taken !== CONFLICT) return taken;
        checkTime(deadline);
        await sleep(Math.random() * 20 * (conflict + 1));
      }
      throw new StoreError(`${this.#describe(`tryAcquire ${claim}`)}: other agents kept taking slots (${MAX_CONFLICTS} conflicts)`);
    });
  }

  async renew(slot: string, claim: Claim): Promise<boolean> {
    const key = this.#holderKey(claim);
    return this.#run(`renew ${slot} for ${claim}`, async (deadline) => {
      for (let conflict = 0; conflict < MAX_CONFLICTS; conflict++) {
        const read = await this.#client.kv.range({ key: bytes(key) });
        const kv = read.kvs[0];
        // Gone: its lease expired. Never recreated here; only tryAcquire takes a slot.
        if (!kv) return false;
        const held = this.#parseHolder(kv);
        if (held.slot === null || slotName(held.slot) !== slot) return false;
        // On another lease (a restarted agent's, or one lost and replaced) it moves onto the one kept
        // alive, unless it changed or vanished since the read. That lease is then renewed here too:
        // the background keep-alive stream can stall for a whole TTL on a member that hangs.
        const renewed = await this.#withLease(async (lease, session) => {
          if (kv.lease !== lease) {
            checkTime(deadline);
            const txn = await this.#client.kv.txn({
              compare: [{ key: bytes(key), target: 'Mod', result: 'Equal', mod_revision: kv.mod_revision }],
              success: [{ request_put: { key: bytes(key), value: kv.value, lease } }],
              failure: [],
            });
            if (!txn.succeeded) return false;
          }
          await session.lease.keepaliveOnce({ deadline: wallClock() + this.#attemptMs });
          return true;
        });
        if (renewed) return true;
      }
      throw new StoreError(`${this.#describe(`renew ${slot} for ${claim}`)}: the share kept changing (${MAX_CONFLICTS} conflicts)`);
    });
  }

  async release(slot: string, claim: Claim): Promise<void> {
    // This VM's share of the claim, whatever slot the caller names: it holds one share per claim
    // at most, and freeing it can only make room.
    await this.#run(`release ${slot} for ${claim}`, async () => {
      await this.#client.kv.deleteRange({ key: bytes(this.#holderKey(claim)) });
    });
  }

  async register(): Promise<void> {
    const key = `${this.#root}members/${segment(this.#vm)}`;
    await this.#run('register', async () => {
      // Put only if absent, so registeredAt stays the first registration.
      await this.#client.kv.txn({
        compare: [{ key: bytes(key), target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [put(key, { vm: this.options.vm, registeredAt: new Date(this.#now()).toISOString() })],
        failure: [],
      });
    });
  }

  async members(): Promise<Member[]> {
    return this.#run('members', async () => {
      // One read-only transaction: both ranges at one revision.
      const members = `${this.#root}members/`;
      const prepared = `${this.#root}prepared/`;
      const txn = await this.#client.kv.txn({
        compare: [],
        success: [
          { request_range: { key: bytes(members), range_end: prefixEnd(members) } },
          { request_range: { key: bytes(prepared), range_end: prefixEnd(prepared) } },
        ],
        failure: [],
      });
      const [memberKvs, preparedKvs] = txn.responses.map((r) => r.response_range?.kvs ?? []);
      const byVm = new Map<string, Member>();
      for (const kv of memberKvs ?? []) {
        const name = unsegment(kv.key.toString().slice(members.length));
        const value = parseJson(kv.value);
        const vm = typeof value?.vm === 'string' ? value.vm : name;
        byVm.set(vm.toLowerCase(), { vm, prepared: [] });
      }
      for (const kv of preparedKvs ?? []) {
        const [event, vm] = kv.key.toString().slice(prepared.length).split('/');
        if (event === undefined || vm === undefined) continue;
        const member = byVm.get(unsegment(vm));
        if (member && !member.prepared.includes(unsegment(event))) member.prepared.push(unsegment(event));
      }
      return [...byVm.values()]
        .map((m) => ({ vm: m.vm, prepared: m.prepared.sort() }))
        .sort((a, b) => a.vm.toLowerCase().localeCompare(b.vm.toLowerCase()));
    });
  }

  async markPrepared(eventId: string): Promise<void> {
    const id = eventId.toLowerCase();
    this.#marked.add(id);
    await this.#run(`markPrepared ${id}`, async () => {
      await this.#withLease(async (lease) => {
        await this.#client.kv.put(put(this.#preparedKey(id), { vm: this.options.vm, event: id }, lease).request_put);
        this.#marksLease = lease;
      });
    });
  }

  async unmarkPrepared(eventId: string): Promise<void> {
    const id = eventId.toLowerCase();
    this.#marked.delete(id);
    await this.#run(`unmarkPrepared ${id}`, async () => {
      await this.#client.kv.deleteRange({ key: bytes(this.#preparedKey(id)) });
    });
  }

  #holders(): string {
    return `${this.#root}holders/`;
  }

  #fence(): string {
    return `${this.#root}fence`;
  }

  #holderKey(claim: Claim): string {
    return `${this.#holders()}${segment(normalize(claim))}/${segment(this.#vm)}`;
  }

  #preparedKey(id: string): string {
    return `${this.#root}prepared/${segment(id)}/${segment(this.#vm)}`;
  }

  /** A share as read: the claim from its key (its value may be damaged), the rest from its value. */
  #parseHolder(kv: IKeyValue): { key: string; claim: string; slot: number | null; since: string | undefined } {
    const key = kv.key.toString();
    const claim = unsegment(key.slice(this.#holders().length).split('/')[0] ?? '');
    const value = parseJson(kv.value);
    const slot = typeof value?.slot === 'number' && Number.isInteger(value.slot) && value.slot >= 0 ? value.slot : null;
    return { key, claim, slot, since: typeof value?.since === 'string' ? value.since : undefined };
  }

  #grant(): Session {
    const lease = this.#client.lease(this.#ttl, { autoKeepAlive: true });
    const session: Session = { lease, id: lease.grant() };
    session.id.catch(() => this.#forget(session));
    // Expired, revoked, or no answer for 2×TTL: the next call that needs a lease grants another.
    lease.on('lost', () => this.#forget(session));
    this.#session = session;
    return session;
  }

  #forget(session: Session): void {
    if (this.#session === session) this.#session = null;
    session.lease.release();
  }

  /**
   * Runs `fn` with the session lease's id, granting one if there is none. A lease etcd no longer
   * knows is dropped (a transient failure: the retry grants another).
   */
  async #withLease<T>(fn: (lease: string, session: Session) => Promise<T>): Promise<T> {
    const session = this.#session ?? this.#grant();
    const lease = await session.id;
    try {
      await this.#restoreMarks(lease);
      return await fn(lease, session);
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError) this.#forget(session);
      throw err;
    }
  }

  /** Marks made on a lease since lost go onto the current one: this agent is still prepared. */
  async #restoreMarks(lease: string): Promise<void> {
    if (this.#marksLease === null || this.#marksLease === lease || this.#marked.size === 0) return;
    const ids = [...this.#marked];
    await this.#client.kv.txn({
      compare: [],
      success: ids.map((id) => put(this.#preparedKey(id), { vm: this.options.vm, event: id }, lease)),
      failure: [],
    });
    this.#marksLease = lease;
    // One unmarked meanwhile must not stay put.
    const dropped = ids.filter((id) => !this.#marked.has(id));
    if (dropped.length > 0) {
      await this.#client.kv.txn({
        compare: [],
        success: dropped.map((id) => ({ request_delete_range: { key: bytes(this.#preparedKey(id)) } })),
        failure: [],
      });
    }
  }

  #describe(what: string): string {
    return `etcd ${this.where}: ${what}`;
  }

  /**
   * Runs one store call against its deadline (requestTimeoutMs): retried with backoff while etcd
   * fails transiently (a member down, an election, a lease to replace), and abandoned with a
   * StoreError naming the last failure once the time is up, whatever is still in flight.
   */
  async #run<T>(what: string, op: (deadline: Deadline) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError(`${this.#describe(what)}: the store is closed`);
    const timeoutMs = this.options.requestTimeoutMs;
    const deadline: Deadline = { end: monotonicMs() + timeoutMs, expired: false, last: undefined };
    const work = (async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await op(deadline);
        } catch (err) {
          if (!transient(err)) throw err;
          deadline.last = err;
          const pause = Math.min(500, 50 * 2 ** attempt) * (0.5 + Math.random() / 2);
          if (deadline.expired || monotonicMs() + pause >= deadline.end) throw err;
          await sleep(pause);
        }
      }
    })();
    work.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        deadline.expired = true;
        const last = deadline.last === undefined ? '' : ` (last failure: ${message(deadline.last)})`;
        reject(new StoreError(`${this.#describe(what)}: no answer within ${timeoutMs} ms${last}`, { cause: deadline.last }));
      }, timeoutMs);
    });
    try {
      return await Promise.race([work, timedOut]);
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError(`${this.#describe(what)}: ${message(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Opens a store on `options.endpoints`, or throws StoreError (closing what it started). */
export async function openEtcdStore(options: EtcdStoreOptions): Promise<EtcdStore> {
  const store = new EtcdStore(options);
  try {
    await store.open();
    return store;
  } catch (err) {
    await store.close();
    throw err;
  }
}

const CONFLICT = Symbol('conflict');

/** The slot for `claim`: the one its holders name, else the lowest free index, else null (full). */
function pickSlot(claim: string, holders: { claim: string; slot: number | null }[], slots: number): number | null {
  const claims = new Map<string, number | null>();
  for (const h of holders) if (claims.get(h.claim) == null) claims.set(h.claim, h.slot);
  const own = claims.get(claim);
  if (own != null) return own;
  // Present with no readable slot (a damaged value): the claim is in, it just needs a name.
  if (!claims.has(claim) && claims.size >= slots) return null;
  const used = new Set([...claims.values()].filter((s) => s !== null));
  let i = 0;
  while (used.has(i)) i++;
  return i;
}

function slotName(index: number): string {
  return `slots/${index}`;
}

function normalize(claim: Claim): string {
  return claim.toLowerCase();
}

function checkTime(deadline: Deadline): void {
  // Past the deadline the caller has its StoreError; nothing more is written on its behalf.
  if (deadline.expired) throw new StoreError('deadline passed');
}

/** etcd's failures worth another try within the deadline. */
function transient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    isRecoverableError(err) ||
    err instanceof EtcdLeaseInvalidError ||
    err instanceof HostResting ||
    (err as { isBrokenCircuitError?: unknown }).isBrokenCircuitError === true
  );
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function bytes(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

function prefixEnd(prefix: string): Buffer {
  // Our prefixes end in '/', so bumping the last byte never carries.
  const end = bytes(prefix);
  end[end.length - 1] = end[end.length - 1]! + 1;
  return end;
}

function put(key: string, value: unknown, lease?: string): IRequestOp & { request_put: NonNullable<IRequestOp['request_put']> } {
  return { request_put: { key: bytes(key), value: bytes(JSON.stringify(value)), ...(lease === undefined ? {} : { lease }) } };
}

function parseJson(value: Buffer): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A key segment: '/' and '%' escaped, so names cannot reach into other keys. */
function segment(s: string): string {
  return s.replace(/%/g, '%25').replace(/\//g, '%2F');
}

function unsegment(s: string): string {
  return s.replace(/%2F/g, '/').replace(/%25/g, '%');
}

type HostPolicy = ReturnType<NonNullable<NonNullable<IOptions['faultHandling']>['host']>>;

class HostResting extends Error {
  constructor(host: string) {
    super(`${host} failed moments ago and another member may answer`);
  }
}

/**
 * etcd3's per-member policy: a member that just failed is skipped for `restMs`, unless every member
 * has, so after an outage the first member back is tried at once.
 */
class RestingHosts {
  readonly #hosts = new Set<string>();
  readonly #failedUntil = new Map<string, number>();
  constructor(private readonly restMs: number) {}

  policy(host: string): HostPolicy {
    this.#hosts.add(host);
    return new RestingHost(host, this);
  }

  skip(host: string): boolean {
    const now = monotonicMs();
    const resting = (h: string) => (this.#failedUntil.get(h) ?? 0) > now;
    return resting(host) && [...this.#hosts].some((h) => h !== host && !resting(h));
  }

  succeeded(host: string): void {
    this.#failedUntil.delete(host);
  }

  failed(host: string): void {
    this.#failedUntil.set(host, monotonicMs() + this.restMs);
  }
}

const quiet = () => ({ dispose: () => undefined });
const neverAborted = new AbortController().signal;

class RestingHost implements HostPolicy {
  declare readonly _altReturn: never;
  readonly onSuccess = quiet;
  readonly onFailure = quiet;

  constructor(
    private readonly host: string,
    private readonly hosts: RestingHosts,
  ) {}

  async execute<T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T, signal?: AbortSignal): Promise<T> {
    if (this.hosts.skip(this.host)) throw new HostResting(this.host);
    try {
      const result = await fn({ signal: signal ?? neverAborted });
      this.hosts.succeeded(this.host);
      return result;
    } catch (err) {
      if (err instanceof Error && isRecoverableError(err)) this.hosts.failed(this.host);
      throw err;
    }
  }
}
