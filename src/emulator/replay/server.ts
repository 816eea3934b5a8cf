// `forewarn replay`: a recording served as IMDS, with IMDS's request rules, in the recording's own
// timing (scaled by the timing factor) or stepped on a manual clock through the control routes.
import type { AddressInfo } from 'node:net';
import { fastify, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { parseStartRequests } from '../../protocol/approval.js';
import { etagOf, ifNoneMatchHits } from '../../protocol/etag.js';
import { LATEST_TIME_MS, type Recording } from '../../protocol/recording.js';
import { checkApiVersion, featuresOf } from '../../protocol/versions.js';
import { ManualClock, SystemClock, type Clock } from '../../shared/clock.js';
import { MAX_BODY_BYTES } from '../../protocol/errors.js';
import { isMetadataTrue } from '../imds/request-rules.js';
import { ERROR_BODIES, sendError, sendErrorBody, sendJson } from '../imds/responses.js';
import { buildReplayControl, type ReplayControlOptions } from './control.js';
import { checkRecording, readRecordingFile } from './recording-file.js';
import { ReplayTimeline, type ReplayReport } from './timeline.js';

export interface ReplayOptions {
  /** A parsed recording, or the path of a recording file. */
  recording: Recording | string;
  /** system (default): the recording's own timing; manual: stepped with advance() or POST /v1/clock/advance. */
  clock?: 'system' | 'manual';
  /** As the emulator's --timing: the replay runs this many times faster than recorded (dev = 60); default 1. */
  timingFactor?: number;
  imds?: { host: string; port: number };
  /** null: no control routes. */
  control?: { host: string; port: number } | null;
  /** Bearer token the control routes then require (IMDS never asks for one). */
  token?: string | undefined;
  /** Host names besides loopback ones the control routes answer without a token. */
  allowHosts?: readonly string[] | undefined;
}

export interface ReplayStatus extends ReplayReport {
  /** ms into the recording now, approvals' jumps included. */
  position: number;
  clock: 'system' | 'manual';
  now: string;
}

export class Replay {
  readonly timeline: ReplayTimeline;
  readonly clock: Clock;
  readonly factor: number;
  readonly #start: number;
  #imds: FastifyInstance | null = null;
  #control: FastifyInstance | null = null;
  imdsUrl = '';
  controlUrl: string | null = null;

  constructor(recording: Recording, options: { clock?: 'system' | 'manual'; timingFactor?: number } = {}) {
    const factor = options.timingFactor ?? 1;
    if (!Number.isFinite(factor) || factor <= 0) throw new RangeError(`the timing factor must be above 0, got ${factor}`);
    this.factor = factor;
    this.timeline = new ReplayTimeline(recording);
    this.clock = options.clock === 'manual' ? new ManualClock() : new SystemClock();
    this.#start = this.clock.now();
  }

  /** ms into the recording now. */
  position(): number {
    return this.timeline.position((this.clock.now() - this.#start) * this.factor);
  }

  /** The document a VM reads now, NotBefore times moved into the replay's time. */
  document(): { body: string; incarnation: number } {
    const position = this.position();
    const skip = position - (this.clock.now() - this.#start) * this.factor;
    const doc = this.timeline.documentAt(
      position,
      (recorded) => this.#start + (recorded - this.timeline.recordingStart - skip) / this.factor,
    );
    return { body: JSON.stringify(doc), incarnation: doc.DocumentIncarnation };
  }

  status(): ReplayStatus {
    const position = this.position();
    return {
      ...this.timeline.report(position),
      position,
      clock: this.clock instanceof ManualClock ? 'manual' : 'system',
      now: new Date(this.clock.now()).toISOString(),
    };
  }

  /**
   * Manual clock only: moves the replay's clock on by `ms` (the recording moves on ms × the timing
   * factor), never past the last time a replay can show.
   */
  advance(ms: number): void {
    if (!(this.clock instanceof ManualClock))
      throw new Error('the replay runs on the system clock; start it with --clock manual to step it');
    if (this.clock.now() + ms > LATEST_TIME_MS)
      throw new RangeError(`cannot advance the clock past ${new Date(LATEST_TIME_MS).toISOString()}, the last time a replay shows`);
    this.clock.advance(ms);
  }

  async listen(
    options: Pick<ReplayOptions, 'imds' | 'control'> & ReplayControlOptions = {},
  ): Promise<{ imdsUrl: string; controlUrl: string | null }> {
    this.#imds = buildReplayImds(this);
    await this.#imds.listen(options.imds ?? { host: '127.0.0.1', port: 0 });
    this.imdsUrl = urlOf(this.#imds);
    if (options.control !== null) {
      this.#control = buildReplayControl(this, { token: options.token, allowHosts: options.allowHosts });
      await this.#control.listen(options.control ?? { host: '127.0.0.1', port: 0 });
      this.controlUrl = urlOf(this.#control);
    }
    return { imdsUrl: this.imdsUrl, controlUrl: this.controlUrl };
  }

  async close(): Promise<void> {
    await this.#imds?.close();
    await this.#control?.close();
  }
}

/** Loads a recording (a path: see readRecordingFile for what it refuses; an object is checked the same way), and serves it. */
export async function startReplay(options: ReplayOptions): Promise<Replay> {
  const recording = typeof options.recording === 'string' ? readRecordingFile(options.recording) : checkRecording(options.recording);
  const replay = new Replay(recording, {
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
    ...(options.timingFactor !== undefined ? { timingFactor: options.timingFactor } : {}),
  });
  await replay.listen({
    ...(options.imds ? { imds: options.imds } : {}),
    control: options.control === undefined ? { host: '127.0.0.1', port: 0 } : options.control,
    token: options.token,
    allowHosts: options.allowHosts,
  });
  return replay;
}

function urlOf(app: FastifyInstance): string {
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

type Query = Record<string, unknown>;

function buildReplayImds(replay: Replay): FastifyInstance {
  const app = fastify({ logger: false, bodyLimit: MAX_BODY_BYTES });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));
  const vm = replay.timeline.recording.header.vm;

  /** The same rules as the emulator's IMDS: no proxy header, a known api-version, Metadata: true; the prefix names the recorded VM. */
  function admitted(request: FastifyRequest, reply: FastifyReply): boolean {
    const name = (request.params as { name?: string }).name;
    if (name !== undefined && vm !== null && name !== vm.name) {
      sendError(reply, 404, `This replay serves VM '${vm.name}' only`);
      return false;
    }
    if (request.headers['x-forwarded-for'] !== undefined) {
      sendJson(reply, 400, ERROR_BODIES.proxy);
      return false;
    }
    const check = checkApiVersion((request.query as Query)['api-version']);
    if (!check.ok) {
      sendErrorBody(reply, 400, check.body);
      return false;
    }
    if (featuresOf(check.version).metadataHeaderRequired && !isMetadataTrue(request.headers.metadata)) {
      sendJson(reply, 400, ERROR_BODIES.metadataHeader);
      return false;
    }
    return true;
  }

  const get = (request: FastifyRequest, reply: FastifyReply) => {
    if (!admitted(request, reply)) return;
    // [choice] The recorded document is served whatever api-version is asked: it is what the VM saw.
    const { body, incarnation } = replay.document();
    reply.header('etag', etagOf(incarnation));
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, incarnation)) return void reply.code(304).send();
    sendJson(reply, 200, body);
  };
  const post = (request: FastifyRequest, reply: FastifyReply) => {
    if (!admitted(request, reply)) return;
    const parsed = parseStartRequests((request.body as Buffer | undefined) ?? '');
    if (!parsed.ok) return sendError(reply, 400, parsed.error);
    const { unknown } = replay.timeline.approve(replay.position(), parsed.eventIds);
    if (unknown.length > 0) return sendError(reply, 400, `Unknown EventId: ${unknown.join(', ')}`);
    reply.code(200).send();
  };
  const compute = (request: FastifyRequest, reply: FastifyReply) => {
    if (request.headers['x-forwarded-for'] !== undefined) return sendJson(reply, 400, ERROR_BODIES.proxy);
    if (!isMetadataTrue(request.headers.metadata)) return sendJson(reply, 400, ERROR_BODIES.metadataHeader);
    if (vm === null) return sendJson(reply, 404, ERROR_BODIES.notFound);
    sendJson(
      reply,
      200,
      JSON.stringify({ name: vm.name, vmId: vm.vmId ?? '', resourceId: vm.resourceId ?? '', location: vm.location ?? '' }),
    );
  };
  for (const prefix of ['', '/vms/:name']) {
    app.get(`${prefix}/metadata/scheduledevents`, get);
    app.post(`${prefix}/metadata/scheduledevents`, post);
    app.get(`${prefix}/metadata/instance/compute`, compute);
  }
  app.setNotFoundHandler((_request, reply) => sendJson(reply, 404, ERROR_BODIES.notFound));
  return app;
}
