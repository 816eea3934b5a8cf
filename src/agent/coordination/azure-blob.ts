// The FleetStore on Azure Blob Storage: a container every agent of the fleet can read and write, nothing
// else to run. The Azure packages load on first use (dynamic import), so agents on other backends never pay for them.
//
// Layout, under `<group>/` in the container:
//   slots/<i>                    one empty blob per slot (i < slots), made on open() if missing. Its metadata says
//                                who holds it: `claim` and `holders` (comma-separated lowercase VM names).
//   members/<vm lowercase>       permanent; JSON {vm, registeredAt}, and the VM's own spelling in metadata `vm`.
//   prepared/<event id>/<vm>     an empty blob per "this VM is prepared for this event"; deleted to take it back.
//
// What Blob guarantees, and what this builds on it:
// - Exclusivity: a slot blob's lease has one id at a time (acquiring with another id is 409 LeaseAlreadyPresent),
//   and a leased blob's metadata can only be written with that id. The lease id is derived from (group, claim), so
//   the VMs of one event share it: each can acquire and renew the same lease, and none of another claim can.
//   Every write that puts a VM among the holders is also conditional on the ETag it read (If-Match), so two
//   writers never both succeed on one state of the slot.
// - Liveness: blob leases last 15 to 60 s, which need not match leaseSeconds. So every renewal also rewrites the
//   metadata, which moves the blob's Last-Modified: that is the heartbeat. A slot whose holders have not written
//   for leaseSeconds, by the server's own clock (the `date` header of the same response as Last-Modified), is
//   free: its lease, if still running, is broken (period 0) before it is taken. Only the server's clock is read,
//   so VMs' clock skew does not matter. Both headers have one-second resolution: a silent holder keeps its slot
//   at least leaseSeconds and at most leaseSeconds + 2 s.
// - A slot whose lease is held but whose metadata names no holder is someone's acquire in progress: it is
//   skipped, never broken. If that someone died between its two requests, the slot waits for the blob lease
//   to run out (at most 60 s).
//
// Requests per operation (N = slots): open 1 list + 1 per missing slot; tryAcquire N property reads (at once)
// + an acquire and a metadata write (+1 break for a dead holder's slot); renew 3 (lease renew, read, write;
// +1 acquire once the blob lease lapsed); release 2, or 3 for the last holder (+ lease release); register,
// markPrepared, unmarkPrepared 1; members 2 lists. Every request gives up after requestTimeoutMs, with at most
// one immediate retry inside it.
import { createHash } from 'node:crypto';
import type { Agent as HttpsAgent } from 'node:https';
import type { TokenCredential } from '@azure/identity';
import type { BlobClient, ContainerClient, RequestPolicyFactory } from '@azure/storage-blob';
import { wallClock } from '../../shared/clock.js';
import { PEERS, loadPeer } from '../peers.js';
import { StoreError, type Claim, type FleetStore, type Member, type StoreOptions } from './store.js';

export interface AzureBlobStoreOptions extends StoreOptions {
  /** `https://ACCOUNT.blob.core.windows.net/CONTAINER`; the container must exist. */
  containerUrl: string;
  /** A user-assigned managed identity's client id; the VM's system-assigned identity when absent. */
  clientId?: string | null;
  /** Where AZURE_STORAGE_CONNECTION_STRING is read from (default process.env); when set, it is used instead of the identity. */
  env?: Record<string, string | undefined>;
  /** The registration's timestamp; the wall clock by default. */
  now?: () => number;
}

/** What tests (or an unusual network) swap in. */
export interface AzureBlobStoreDeps {
  /** Makes the token credential when there is no connection string (default: ManagedIdentityCredential). */
  credential?: (clientId: string | undefined) => TokenCredential | Promise<TokenCredential>;
  /** Sends every request through this agent, e.g. one that trusts a private CA. */
  httpsAgent?: HttpsAgent;
}

/** Metadata names on a slot blob (C# identifiers, as Azure requires). */
const CLAIM = 'claim';
const HOLDERS = 'holders';
/** Tries of one read-modify-write on a slot before giving up on it for this call. */
const ATTEMPTS = 5;

interface SlotState {
  etag: string;
  claim: string | undefined;
  holders: string[];
  /** Its holders stopped writing leaseSeconds ago by the server's clock. */
  stale: boolean;
  leased: boolean;
}

/** What went wrong in one request, for decisions: the HTTP status and the storage error code. */
interface Failure {
  status: number | undefined;
  code: string | undefined;
}

export class AzureBlobStore implements FleetStore {
  readonly backend = 'azure-blob' as const;
  readonly options: AzureBlobStoreOptions;
  readonly where: string;
  /** How requests are authorized, for logs. */
  readonly credentialSource: 'connection-string' | 'token';

  readonly #deps: AzureBlobStoreDeps;
  readonly #connectionString: string | undefined;
  readonly #vm: string;
  readonly #blobLeaseSeconds: number;
  #container: Promise<ContainerClient> | undefined;
  #closed = false;

  constructor(options: AzureBlobStoreOptions, deps: AzureBlobStoreDeps = {}) {
    this.options = options;
    this.#deps = deps;
    this.#vm = options.vm.toLowerCase();
    // Azure takes 15 to 60 s (or infinite); the heartbeat, not the blob lease, decides when a holder is dead.
    this.#blobLeaseSeconds = Math.min(60, Math.max(15, Math.ceil(options.leaseSeconds)));
    let url: URL;
    try {
      url = new URL(options.containerUrl);
    } catch {
      // Not echoed: it may carry a SAS.
      throw new StoreError('azure-blob: the container URL is not a URL (https://ACCOUNT.blob.core.windows.net/CONTAINER)');
    }
    // Logs name the container, never a SAS or a password that came with the URL.
    url.search = '';
    url.hash = '';
    url.username = '';
    url.password = '';
    this.where = url.toString().replace(/\/$/, '');
    this.#connectionString = (options.env ?? process.env).AZURE_STORAGE_CONNECTION_STRING || undefined;
    this.credentialSource = this.#connectionString ? 'connection-string' : 'token';
  }

  async open(): Promise<void> {
    this.#closed = false;
    const container = await this.#client();
    const existing = new Set<string>();
    await this.#call('list slots', async (signal) => {
      for await (const blob of container.listBlobsFlat({ prefix: this.#key('slots/'), abortSignal: signal })) existing.add(blob.name);
    });
    for (let i = 0; i < this.options.slots; i++) {
      if (!existing.has(this.#slotKey(i))) await this.#createSlot(container.getBlobClient(this.#slotKey(i)));
    }
  }

  async close(): Promise<void> {
    // Nothing to stop on the server: a slot this VM holds stays held until its heartbeat is leaseSeconds old.
    this.#closed = true;
  }

  async tryAcquire(claim: Claim): Promise<string | null> {
    const container = await this.#client();
    const lease = this.#leaseId(claim);
    const indexes = [...Array(this.options.slots).keys()];
    const states = await Promise.all(indexes.map((i) => this.#read(container.getBlobClient(this.#slotKey(i)))));
    // The claim's own slot first (held, or stale and so free), so a claim never spreads over two slots; then free ones in order.
    const order = [
      ...indexes.filter((i) => states[i]!.claim === claim && states[i]!.holders.length > 0),
      ...indexes.filter((i) => !(states[i]!.claim === claim && states[i]!.holders.length > 0)),
    ];
    for (const i of order) {
      if (await this.#take(container.getBlobClient(this.#slotKey(i)), claim, lease, states[i]!)) return slotName(i);
    }
    return null;
  }

  async renew(slot: string, claim: Claim): Promise<boolean> {
    const index = slotIndex(slot);
    if (index === undefined) return false;
    const blob = (await this.#client()).getBlobClient(this.#slotKey(index));
    const lease = this.#leaseId(claim);
    const leaseClient = blob.getBlobLeaseClient(lease);
    try {
      await this.#call('renew lease', (signal) => leaseClient.renewLease({ abortSignal: signal }));
    } catch (err) {
      const f = failure(err);
      if (f.status === 404) return false;
      if (f.status !== 409) throw err;
      // Expired past renewal, released or broken: take it again with the same id, unless another lease holds it now.
      try {
        await this.#call('acquire lease', (signal) => leaseClient.acquireLease(this.#blobLeaseSeconds, { abortSignal: signal }));
      } catch (err2) {
        if (failure(err2).status === 409) return false;
        throw err2;
      }
    }
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const state = await this.#read(blob);
      if (state.claim !== claim || !state.holders.includes(this.#vm)) {
        // Taken or given back meanwhile. Hand our lease back unless a VM of our claim still holds the slot through it.
        if (state.claim !== claim || state.holders.length === 0) await this.#releaseLease(blob, lease);
        return false;
      }
      try {
        await this.#writeHolders(blob, claim, state.holders, lease, state.etag);
        return true;
      } catch (err) {
        const f = failure(err);
        if (isLeaseLost(f)) return false;
        if (f.code !== 'ConditionNotMet') throw err;
        // Another VM of the claim wrote in between: read again.
      }
    }
    throw new StoreError(`azure-blob ${this.where}: renew ${slot}: the slot kept changing under ${ATTEMPTS} tries`);
  }

  async release(slot: string, claim: Claim): Promise<void> {
    const index = slotIndex(slot);
    if (index === undefined) return;
    const blob = (await this.#client()).getBlobClient(this.#slotKey(index));
    const lease = this.#leaseId(claim);
    let reacquired = false;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const state = await this.#read(blob);
      // Never touch a slot held for another claim, or one this VM has no share in.
      if (state.claim !== claim || !state.holders.includes(this.#vm)) return;
      const rest = state.holders.filter((h) => h !== this.#vm);
      try {
        if (rest.length > 0) await this.#writeHolders(blob, claim, rest, lease, state.etag);
        else
          await this.#call('clear slot', (signal) =>
            blob.setMetadata({}, { abortSignal: signal, conditions: { leaseId: lease, ifMatch: state.etag } }),
          );
      } catch (err) {
        const f = failure(err);
        if (f.code === 'ConditionNotMet') continue;
        if (!isLeaseLost(f) || reacquired) throw err;
        // Our blob lease lapsed (the heartbeat may still be fresh): take it back, or leave the slot alone if another claim has.
        reacquired = true;
        try {
          await this.#call('acquire lease', (signal) =>
            blob.getBlobLeaseClient(lease).acquireLease(this.#blobLeaseSeconds, { abortSignal: signal }),
          );
        } catch (err2) {
          if (failure(err2).status === 409) return;
          throw err2;
        }
        continue;
      }
      if (rest.length === 0) await this.#releaseLease(blob, lease);
      return;
    }
    throw new StoreError(`azure-blob ${this.where}: release ${slot}: the slot kept changing under ${ATTEMPTS} tries`);
  }

  async register(): Promise<void> {
    const blob = (await this.#client()).getBlockBlobClient(this.#key(`members/${this.#vm}`));
    const body = JSON.stringify({ vm: this.options.vm, registeredAt: new Date((this.options.now ?? wallClock)()).toISOString() });
    await this.#ignore(['BlobAlreadyExists'], 'register', (signal) =>
      blob.upload(body, Buffer.byteLength(body), {
        abortSignal: signal,
        conditions: { ifNoneMatch: '*' },
        metadata: { vm: this.options.vm },
        blobHTTPHeaders: { blobContentType: 'application/json' },
      }),
    );
  }

  async members(): Promise<Member[]> {
    const container = await this.#client();
    const membersPrefix = this.#key('members/');
    const preparedPrefix = this.#key('prepared/');
    const [members, marks] = await Promise.all([
      this.#call('list members', async (signal) => {
        const found: { key: string; vm: string }[] = [];
        for await (const blob of container.listBlobsFlat({ prefix: membersPrefix, includeMetadata: true, abortSignal: signal })) {
          const key = blob.name.slice(membersPrefix.length);
          found.push({ key, vm: blob.metadata?.vm ?? key });
        }
        return found;
      }),
      this.#call('list prepared', async (signal) => {
        const found: string[] = [];
        for await (const blob of container.listBlobsFlat({ prefix: preparedPrefix, abortSignal: signal })) {
          found.push(blob.name.slice(preparedPrefix.length));
        }
        return found;
      }),
    ]);
    const prepared = new Map<string, string[]>();
    for (const mark of marks) {
      const cut = mark.lastIndexOf('/');
      if (cut <= 0) continue;
      const vm = mark.slice(cut + 1);
      prepared.set(vm, [...(prepared.get(vm) ?? []), mark.slice(0, cut)]);
    }
    return members.map(({ key, vm }) => ({ vm, prepared: (prepared.get(key) ?? []).sort() }));
  }

  async markPrepared(eventId: string): Promise<void> {
    const blob = (await this.#client()).getBlockBlobClient(this.#markKey(eventId));
    await this.#ignore(['BlobAlreadyExists'], 'mark prepared', (signal) =>
      blob.upload('', 0, { abortSignal: signal, conditions: { ifNoneMatch: '*' } }),
    );
  }

  async unmarkPrepared(eventId: string): Promise<void> {
    const blob = (await this.#client()).getBlobClient(this.#markKey(eventId));
    await this.#call('unmark prepared', (signal) => blob.deleteIfExists({ abortSignal: signal }));
  }

  /**
   * Puts this VM among the slot's holders for `claim`, from the state read just before. False when the slot is
   * another claim's, or another VM is taking it at the same moment: the caller tries the next slot.
   */
  async #take(blob: BlobClient, claim: Claim, lease: string, first: SlotState): Promise<boolean> {
    let state = first;
    let broke = false;
    let acquired = false;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const live = state.holders.length > 0 && !state.stale;
      if (live && state.claim !== claim) break;
      // A dead holder's lease (longer than leaseSeconds) still runs: end it. Our own claim's lease we simply take again.
      // Conditional on what we read, so a slot someone took meanwhile keeps its lease; and only once, so two
      // takers never keep breaking each other.
      if (!live && state.stale && state.leased && state.claim !== claim) {
        if (broke) break;
        broke = true;
        try {
          await this.#call('break lease', (signal) =>
            blob.getBlobLeaseClient(lease).breakLease(0, { abortSignal: signal, conditions: { ifMatch: state.etag } }),
          );
        } catch (err) {
          const code = failure(err).code;
          if (code === 'ConditionNotMet') {
            // Written since we read it: its holder is alive after all, or someone took it.
            state = await this.#read(blob);
            continue;
          }
          // Already ended (it expired, or another taker broke it): go on and acquire.
          if (code !== 'LeaseNotPresentWithLeaseOperation') throw err;
        }
      }
      try {
        await this.#call('acquire lease', (signal) =>
          blob.getBlobLeaseClient(lease).acquireLease(this.#blobLeaseSeconds, { abortSignal: signal }),
        );
        acquired = true;
      } catch (err) {
        // Another claim's lease: someone is taking this slot right now (or holds it).
        if (failure(err).code === 'LeaseAlreadyPresent') break;
        throw err;
      }
      const holders = live ? [...new Set([...state.holders, this.#vm])] : [this.#vm];
      try {
        await this.#writeHolders(blob, claim, holders, lease, state.etag);
        return true;
      } catch (err) {
        const f = failure(err);
        // Our lease was broken between acquiring and writing: someone else is taking the slot.
        if (isLeaseLost(f)) return false;
        if (f.code !== 'ConditionNotMet') throw err;
        // Written meanwhile (a VM of our claim joining or renewing, or a racer with our claim's lease): read again.
        state = await this.#read(blob);
      }
    }
    // Giving up on this slot: if we took its lease but no VM of our claim holds the slot, hand the lease back.
    if (acquired) {
      const now = await this.#read(blob);
      if (now.claim !== claim || now.holders.length === 0) await this.#releaseLease(blob, lease);
    }
    return false;
  }

  async #writeHolders(blob: BlobClient, claim: Claim, holders: string[], lease: string, etag: string): Promise<void> {
    await this.#call('write slot', (signal) =>
      blob.setMetadata(
        { [CLAIM]: claim, [HOLDERS]: holders.join(',') },
        { abortSignal: signal, conditions: { leaseId: lease, ifMatch: etag } },
      ),
    );
  }

  async #releaseLease(blob: BlobClient, lease: string): Promise<void> {
    // 409: the lease is not ours (or not there): nothing to give back.
    await this.#ignore(['LeaseIdMismatchWithLeaseOperation', 'LeaseNotPresentWithLeaseOperation'], 'release lease', (signal) =>
      blob.getBlobLeaseClient(lease).releaseLease({ abortSignal: signal }),
    );
  }

  /** The slot's holders and whether their heartbeat is stale, by the server's clock; a missing slot blob is made. */
  async #read(blob: BlobClient): Promise<SlotState> {
    for (let attempt = 0; ; attempt++) {
      try {
        const props = await this.#call('read slot', (signal) => blob.getProperties({ abortSignal: signal }));
        const holders = (props.metadata?.[HOLDERS] ?? '').split(',').filter((h) => h !== '');
        const modified = props.lastModified?.getTime();
        const serverNow = props.date?.getTime();
        // Only holders go stale: a leased slot that names none is someone's acquire in progress, however old the blob.
        // Both times are whole seconds: a difference of leaseSeconds + 1 means at least leaseSeconds really passed.
        const stale =
          holders.length > 0 &&
          modified !== undefined &&
          serverNow !== undefined &&
          serverNow - modified >= (this.options.leaseSeconds + 1) * 1000;
        return {
          etag: props.etag ?? '',
          claim: props.metadata?.[CLAIM] || undefined,
          holders,
          stale,
          leased: props.leaseState === 'leased' || props.leaseState === 'breaking',
        };
      } catch (err) {
        if (failure(err).status !== 404 || attempt > 0) throw err;
        await this.#createSlot(blob);
      }
    }
  }

  async #createSlot(blob: BlobClient): Promise<void> {
    await this.#ignore(['BlobAlreadyExists', 'LeaseIdMissing'], 'create slot', (signal) =>
      blob.getBlockBlobClient().upload('', 0, { abortSignal: signal, conditions: { ifNoneMatch: '*' } }),
    );
  }

  #key(rest: string): string {
    return `${this.options.group}/${rest}`;
  }

  #slotKey(i: number): string {
    return this.#key(`slots/${i}`);
  }

  #markKey(eventId: string): string {
    return this.#key(`prepared/${eventId.toLowerCase()}/${this.#vm}`);
  }

  /** The same for every VM of the group that proposes it for `claim`: sha256 in a GUID's shape, as Azure wants. */
  #leaseId(claim: Claim): string {
    const hex = createHash('sha256').update(`${this.options.group}\n${claim}`).digest('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
  }

  async #client(): Promise<ContainerClient> {
    if (this.#closed) throw new StoreError(`azure-blob ${this.where}: the store is closed`);
    this.#container ??= this.#makeClient().catch((err: unknown) => {
      this.#container = undefined;
      throw err instanceof StoreError ? err : new StoreError(`azure-blob ${this.where}: ${describe(err)}`);
    });
    return this.#container;
  }

  async #makeClient(): Promise<ContainerClient> {
    const { BlobServiceClient, ContainerClient, newPipeline } = await loadPeer(PEERS.blob, () => import('@azure/storage-blob'));
    const options = {
      // One quick retry at most (a dropped keep-alive connection); the abort signal bounds the whole request.
      retryOptions: {
        maxTries: 2,
        tryTimeoutInMs: Math.max(1000, this.options.requestTimeoutMs),
        retryDelayInMs: 100,
        maxRetryDelayInMs: 500,
      },
      userAgentOptions: { userAgentPrefix: 'forewarn' },
    };
    let url: string;
    let pipeline;
    if (this.#connectionString) {
      // The connection string names the account (and its key or SAS); the container is the URL's last segment.
      const name = new URL(this.options.containerUrl).pathname.split('/').filter(Boolean).pop();
      if (!name) throw new StoreError(`azure-blob ${this.where}: the container URL names no container`);
      let service;
      try {
        service = BlobServiceClient.fromConnectionString(this.#connectionString);
      } catch (err) {
        throw new StoreError(`azure-blob ${this.where}: AZURE_STORAGE_CONNECTION_STRING is not usable: ${describe(err)}`);
      }
      url = service.getContainerClient(name).url;
      pipeline = newPipeline(service.credential, options);
    } else {
      const clientId = this.options.clientId ?? undefined;
      const credential = this.#deps.credential
        ? await this.#deps.credential(clientId)
        : await loadPeer(PEERS.identity, () => import('@azure/identity')).then(({ ManagedIdentityCredential }) =>
            clientId ? new ManagedIdentityCredential({ clientId }) : new ManagedIdentityCredential(),
          );
      url = this.options.containerUrl;
      pipeline = newPipeline(credential, options);
    }
    if (this.#deps.httpsAgent) pipeline.factories.push(agentPolicy(this.#deps.httpsAgent));
    return new ContainerClient(url, pipeline);
  }

  /** Runs one request with its timeout, and turns whatever fails into a StoreError that says what to do. */
  async #call<T>(operation: string, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = AbortSignal.timeout(this.options.requestTimeoutMs);
    try {
      return await request(signal);
    } catch (err) {
      if (signal.aborted) {
        throw new StoreError(`azure-blob ${this.where}: ${operation}: no answer within ${this.options.requestTimeoutMs} ms`, {
          cause: err,
        });
      }
      const f = failure(err);
      const error = new StoreError(`azure-blob ${this.where}: ${operation}: ${describe(err)}${hint(f, err)}`, { cause: err });
      Object.assign(error, { status: f.status, code: f.code });
      throw error;
    }
  }

  /** Like #call, but the listed storage error codes are an expected outcome: false instead of a throw. */
  async #ignore(codes: string[], operation: string, request: (signal: AbortSignal) => Promise<unknown>): Promise<boolean> {
    try {
      await this.#call(operation, request);
      return true;
    } catch (err) {
      const code = failure(err).code;
      if (code !== undefined && codes.includes(code)) return false;
      throw err;
    }
  }
}

export function slotName(i: number): string {
  return `slots/${i}`;
}

function slotIndex(slot: string): number | undefined {
  const m = /^slots\/(\d+)$/.exec(slot);
  return m ? Number(m[1]) : undefined;
}

/** The status and storage error code of a failed request (a HEAD response has the code only in a header). */
function failure(err: unknown): Failure {
  const e = (err instanceof StoreError ? err.cause : err) as
    { statusCode?: number; code?: string; details?: { errorCode?: string } } | undefined;
  const fromStore = err instanceof StoreError ? (err as StoreError & { status?: number; code?: string }) : undefined;
  return {
    status: fromStore?.status ?? e?.statusCode,
    code: fromStore?.code ?? e?.details?.errorCode ?? e?.code,
  };
}

/** Our lease is gone: expired, broken, or another's now. */
function isLeaseLost(f: Failure): boolean {
  return (
    f.status === 412 &&
    ['LeaseIdMismatchWithBlobOperation', 'LeaseNotPresentWithBlobOperation', 'LeaseLost', 'LeaseIdMissing'].includes(f.code ?? '')
  );
}

function describe(err: unknown): string {
  const e = err as {
    statusCode?: number;
    code?: string;
    details?: { errorCode?: string; authenticationErrorDetail?: string };
    message?: string;
  };
  const code = e?.details?.errorCode ?? e?.code;
  const status = e?.statusCode;
  if (status !== undefined) {
    const detail = e.details?.authenticationErrorDetail ? ` (${e.details.authenticationErrorDetail})` : '';
    return `${status} ${code ?? ''}${detail}`.trim();
  }
  const message = (e?.message ?? String(err)).split('\n')[0];
  return code && !message?.includes(code) ? `${code}: ${message}` : (message ?? String(err));
}

function hint(f: Failure, err: unknown): string {
  const name = (err as { name?: string } | undefined)?.name;
  if (name === 'CredentialUnavailableError' || name === 'AuthenticationError') {
    return ': no token from the managed identity (give the VM one, or set AZURE_STORAGE_CONNECTION_STRING)';
  }
  switch (f.code) {
    case 'AuthorizationPermissionMismatch':
    case 'AuthorizationFailure':
      return ': the VM\u2019s identity needs the "Storage Blob Data Contributor" role on the container';
    case 'AuthenticationFailed':
    case 'InvalidAuthenticationInfo':
      return ': the storage account refused the credential (a token for the wrong audience or tenant, or a wrong key)';
    case 'ContainerNotFound':
      return ': create the container first (az storage container create)';
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ECONNRESET':
    case 'ETIMEDOUT':
      return ': the storage account is unreachable';
    default:
      return '';
  }
}

/** A downlevel request policy (the kind a storage Pipeline takes) that sends every request through `agent`. */
function agentPolicy(agent: HttpsAgent): RequestPolicyFactory {
  return {
    create: (next) => ({
      sendRequest(request) {
        request.agent = agent;
        return next.sendRequest(request);
      },
    }),
  };
}
