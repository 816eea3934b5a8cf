// The served OpenAPI document's enums are the declared lists, not copies of them: each is compared with
// the constant it must come from, and an enum that matches no declared list fails, so a retyped one is caught.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import {
  ACTIVATION_MODES,
  ACTIVATION_STATUSES,
  CLOCK_MODES,
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  OPERATION_TYPES,
  START_CAUSES,
  STEP_STATUSES,
} from '../../../src/protocol/control.js';
import { EVENT_SOURCES, EVENT_STATUSES, EVENT_TYPES } from '../../../src/protocol/types.js';
import { API_VERSIONS } from '../../../src/protocol/versions.js';
import { EVENT_GRID_SCHEMAS } from '../../../src/protocol/eventgrid.js';
import { ARM_ACKNOWLEDGE_API_VERSIONS, ARM_COMPUTE_TYPES } from '../../../src/protocol/arm.js';
import { buildControlServer } from '../../../src/emulator/control/server.js';
import {
  ENDED_OUTCOMES,
  SCENARIO_RUN_STATUSES,
  STREAM_INCLUDES,
  STREAM_TOPICS,
  TIMING_PROFILE_NAMES,
} from '../../../src/emulator/control/schemas.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { Engine, OPERATION_STATUSES } from '../../../src/emulator/engine/engine.js';
import {
  EVICTION_POLICIES,
  ORCHESTRATION_MODES,
  OS_TYPES,
  POWER_STATES,
  PRIORITIES,
  TENANT_KINDS,
  ZONES,
} from '../../../src/emulator/engine/fleet.js';
import { VM_STATES } from '../../../src/emulator/engine/vm-state.js';
import { FAULT_STATUSES, FaultRegistry } from '../../../src/emulator/imds/faults.js';
import { RateLimiter } from '../../../src/emulator/imds/rate-limit.js';
import { ACTIONS } from '../../../src/emulator/scenarios/format.js';
import { PROCESS_KINDS } from '../../../src/emulator/impact/binding.js';
import { IMPACT_ACTIONS, PROCESS_STATUSES } from '../../../src/emulator/impact/log.js';
import { IMPACT_SIGNALS } from '../../../src/emulator/impact/signals.js';

type Json = Record<string, unknown>;

let app: FastifyInstance;
let doc: Json;

before(async () => {
  const clock = new ManualClock(Date.parse('2024-01-01T00:00:00Z'));
  app = buildControlServer({
    engine: new Engine({ clock, fleet: [{ name: 'vm0' }] }),
    clock,
    faults: new FaultRegistry(),
    rateLimiter: new RateLimiter(),
  });
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  assert.equal(res.statusCode, 200);
  doc = res.json();
});
after(() => app.close());

/** The value at a path of keys into the served document. */
function at(path: readonly (string | number)[]): unknown {
  let cur: unknown = doc;
  for (const key of path) {
    assert.ok(typeof cur === 'object' && cur !== null, `nothing at ${path.join('.')}`);
    cur = (cur as Json)[key as string];
  }
  return cur;
}

const schema = (...path: (string | number)[]) => ['components', 'schemas', ...path];
const prop = (id: string, ...path: (string | number)[]) => schema(id, 'properties', ...path, 'enum');

const ARM_LIST =
  '/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/providers/microsoft.compute/{resourceType}/{resourceName}/providers/microsoft.maintenance/scheduledevents';

// Where each declared list shows in the document; the same list in the same order.
const PLACES: readonly [string, readonly (string | number)[], readonly unknown[]][] = [
  ['api-version of the document route', ['paths', '/v1/vms/{name}/document', 'get', 'parameters', 1, 'schema', 'enum'], API_VERSIONS],
  ['newest-versions of an IMDS error', [...schema('ImdsError', 'properties', 'newest-versions', 'items'), 'enum'], API_VERSIONS],
  ['status query of GET /v1/operations', ['paths', '/v1/operations', 'get', 'parameters', 2, 'schema', 'enum'], OPERATION_STATUSES],
  ['include query of GET /v1/stream', ['paths', '/v1/stream', 'get', 'parameters', 0, 'schema', 'enum'], STREAM_INCLUDES],
  ['VmBody.tenantKind', prop('VmBody', 'tenantKind'), TENANT_KINDS],
  ['VmBody.priority', prop('VmBody', 'priority'), PRIORITIES],
  ['VmBody.zone', prop('VmBody', 'zone'), ZONES],
  ['VmBody.osType', prop('VmBody', 'osType'), OS_TYPES],
  ['VmBody.orchestrationMode', prop('VmBody', 'orchestrationMode'), ORCHESTRATION_MODES],
  ['Vm.orchestrationMode', prop('Vm', 'orchestrationMode'), ORCHESTRATION_MODES],
  ['OperationBody.type', prop('OperationBody', 'type'), OPERATION_TYPES],
  ['FaultBody.status', prop('FaultBody', 'status'), FAULT_STATUSES],
  ['EventGridSubscriptionBody.schema', prop('EventGridSubscriptionBody', 'schema'), EVENT_GRID_SCHEMAS],
  ['EventGridSubscription.schema', prop('EventGridSubscription', 'schema'), EVENT_GRID_SCHEMAS],
  ['Vm.tenantKind', prop('Vm', 'tenantKind'), TENANT_KINDS],
  ['Vm.evictionPolicy', prop('Vm', 'evictionPolicy'), EVICTION_POLICIES],
  ['Vm.powerState', prop('Vm', 'powerState'), POWER_STATES],
  ['Vm.state', prop('Vm', 'state'), VM_STATES],
  ['Vm.scheduledEvents', prop('Vm', 'scheduledEvents'), ACTIVATION_STATUSES],
  ['Fleet.tenants[].kind', prop('Fleet', 'tenants', 'items', 'properties', 'kind'), TENANT_KINDS],
  ['RollingStep.status', prop('RollingStep', 'status'), STEP_STATUSES],
  ['Operation.type', prop('Operation', 'type'), OPERATION_TYPES],
  ['Operation.status', prop('Operation', 'status'), OPERATION_STATUSES],
  ['OperationCreated.status', prop('OperationCreated', 'status'), OPERATION_STATUSES],
  ['Event.type', prop('Event', 'type'), EVENT_TYPES],
  ['Event.source', prop('Event', 'source'), EVENT_SOURCES],
  ['Event.status', prop('Event', 'status'), EVENT_STATUSES],
  ['Event.startedBy', [...schema('Event', 'properties', 'startedBy', 'anyOf', 0), 'enum'], START_CAUSES],
  ['EndedEvent.outcome', prop('EndedEvent', 'outcome'), ENDED_OUTCOMES],
  ['Document EventType', prop('Document', 'Events', 'items', 'properties', 'EventType'), EVENT_TYPES],
  ['Clock.mode', prop('Clock', 'mode'), CLOCK_MODES],
  ['Clock.activation', prop('Clock', 'activation'), ACTIVATION_MODES],
  ['StreamChanged.topics', [...schema('StreamChanged', 'properties', 'topics', 'items'), 'enum'], STREAM_TOPICS],
  ['ScenarioBody.timing', [...schema('ScenarioBody', 'properties', 'timing', 'anyOf', 0), 'enum'], TIMING_PROFILE_NAMES],
  ['ScenarioRun.status', prop('ScenarioRun', 'status'), SCENARIO_RUN_STATUSES],
  ['Process.kind', prop('Process', 'kind'), PROCESS_KINDS],
  ['Process.status', prop('Process', 'status'), PROCESS_STATUSES],
  ['ImpactEntry.action', prop('ImpactEntry', 'action'), IMPACT_ACTIONS],
  ['ImpactEntry.signal', [...schema('ImpactEntry', 'properties', 'signal', 'anyOf', 0), 'enum'], IMPACT_SIGNALS],
  ['resourceType of the ARM list route', ['paths', ARM_LIST, 'post', 'parameters', 2, 'schema', 'enum'], ARM_COMPUTE_TYPES],
  ['api-version of the ARM list route', ['paths', ARM_LIST, 'post', 'parameters', 4, 'schema', 'enum'], ARM_ACKNOWLEDGE_API_VERSIONS],
];

/** Every list the document may take an enum from; an enum equal to none of them was typed out somewhere. */
const DECLARED: readonly (readonly unknown[])[] = [
  API_VERSIONS,
  ARM_COMPUTE_TYPES,
  ARM_ACKNOWLEDGE_API_VERSIONS,
  OPERATION_STATUSES,
  TENANT_KINDS,
  PRIORITIES,
  ZONES,
  OS_TYPES,
  ORCHESTRATION_MODES,
  EVICTION_POLICIES,
  POWER_STATES,
  OPERATION_TYPES,
  FAULT_STATUSES,
  VM_STATES,
  ACTIVATION_STATUSES,
  ACTIVATION_MODES,
  CLOCK_MODES,
  STEP_STATUSES,
  START_CAUSES,
  EVENT_TYPES,
  EVENT_SOURCES,
  EVENT_STATUSES,
  ENDED_OUTCOMES,
  STREAM_TOPICS,
  STREAM_INCLUDES,
  TIMING_PROFILE_NAMES,
  SCENARIO_RUN_STATUSES,
  ACTIONS,
  PROCESS_KINDS,
  PROCESS_STATUSES,
  IMPACT_ACTIONS,
  IMPACT_SIGNALS,
  EVENT_GRID_SCHEMAS,
];

/**
 * Lists the scenario file format (src/emulator/scenarios/format.ts) declares inline, once, for its own
 * steps: the statuses a step may expect, and whether an incarnation changed.
 */
const SCENARIO_FORMAT_ONLY: readonly (readonly unknown[])[] = [
  [200, 400, 404],
  [200, 404, 409],
  ['changed', 'unchanged'],
];

const sameSet = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((x) => b.includes(x));

function enumsIn(value: unknown, path: string, out: [string, unknown[]][]): [string, unknown[]][] {
  if (Array.isArray(value)) value.forEach((v, i) => enumsIn(v, `${path}[${i}]`, out));
  else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      if (key === 'enum' && Array.isArray(v)) out.push([path, v]);
      else enumsIn(v, `${path}.${key}`, out);
    }
  }
  return out;
}

describe('the served OpenAPI enums', () => {
  for (const [where, path, declared] of PLACES) {
    test(`${where} is the declared list`, () => assert.deepEqual(at(path), [...declared]));
  }

  test('every enum in the document is a declared list', () => {
    const found = enumsIn(doc, '', []);
    assert.ok(found.length >= PLACES.length, `only ${found.length} enums found`);
    for (const [path, values] of found) {
      const known = [...DECLARED, ...SCENARIO_FORMAT_ONLY].some((list) => sameSet(values, list));
      assert.ok(known, `${path}: ${JSON.stringify(values)} is not a declared list; declare it once and import it`);
    }
  });

  test('the page limits are the declared ones', () => {
    const limit = at(['paths', '/v1/history', 'get', 'parameters', 0, 'schema']) as Json;
    assert.equal(limit.maximum, MAX_PAGE_LIMIT);
    assert.equal(limit.default, DEFAULT_PAGE_LIMIT);
  });
});
