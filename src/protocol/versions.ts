// Which api-versions exist and what each one can show (SPEC section 1, "Fields depend on the api-version").
import { EVENT_TYPES, type EventType } from './types.js';
import type { ImdsErrorBody } from './errors.js';

export const API_VERSIONS = ['2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01', '2019-08-01', '2020-07-01'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

export const LATEST_API_VERSION: ApiVersion = '2020-07-01';

export const NEWEST_VERSIONS: readonly ApiVersion[] = Object.freeze([...API_VERSIONS].reverse());

export interface VersionFeatures {
  preview: boolean;
  /** IaaS VM names in Resources carry a leading `_` (cloud-service role instances never do: render.ts). */
  underscorePrefix: boolean;
  metadataHeaderRequired: boolean;
  eventTypes: ReadonlySet<EventType>;
  description: boolean;
  eventSource: boolean;
  durationInSeconds: boolean;
}

/** The one table: per feature or rule, the first version that has it (SPEC table, seed). */
const FIRST_VERSION = {
  general: '2017-08-01', // 2017-03-01 is the preview
  resourcesWithoutUnderscore: '2017-08-01',
  metadataHeaderRequired: '2017-08-01',
  Freeze: '2017-03-01',
  Reboot: '2017-03-01',
  Redeploy: '2017-03-01',
  Preempt: '2017-11-01',
  Terminate: '2019-01-01',
  description: '2019-04-01',
  eventSource: '2019-08-01',
  durationInSeconds: '2020-07-01',
} as const satisfies Record<EventType, ApiVersion> & Record<string, ApiVersion>;

const ORDER: ReadonlyMap<string, number> = new Map(API_VERSIONS.map((v, i) => [v, i]));

function has(v: ApiVersion, key: keyof typeof FIRST_VERSION): boolean {
  return (ORDER.get(v) ?? -1) >= (ORDER.get(FIRST_VERSION[key]) ?? Infinity);
}

// Computed once; callers get the same frozen object every time.
const FEATURES: ReadonlyMap<ApiVersion, VersionFeatures> = new Map(
  API_VERSIONS.map((v): [ApiVersion, VersionFeatures] => [
    v,
    Object.freeze({
      preview: !has(v, 'general'),
      underscorePrefix: !has(v, 'resourcesWithoutUnderscore'),
      metadataHeaderRequired: has(v, 'metadataHeaderRequired'),
      eventTypes: new Set(EVENT_TYPES.filter((t) => has(v, t))) as ReadonlySet<EventType>,
      description: has(v, 'description'),
      eventSource: has(v, 'eventSource'),
      durationInSeconds: has(v, 'durationInSeconds'),
    }),
  ]),
);

export function featuresOf(v: ApiVersion): VersionFeatures {
  const f = FEATURES.get(v);
  if (f === undefined) throw new TypeError(`Unknown api-version ${JSON.stringify(v)}`);
  return f;
}

export function isApiVersion(x: unknown): x is ApiVersion {
  return typeof x === 'string' && ORDER.has(x);
}

export const API_VERSION_MISSING =
  'Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds';
export const API_VERSION_INVALID =
  'Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds';

export type VersionCheck = { ok: true; version: ApiVersion } | { ok: false; body: ImdsErrorBody };

// Real IMDS lists only the three newest versions in its error body.
const NEWEST_SHOWN = 3;

function versionError(raw: unknown, newest: readonly string[]): { ok: false; body: ImdsErrorBody } {
  const missing = raw === undefined || raw === '';
  return {
    ok: false,
    body: {
      error: missing ? API_VERSION_MISSING : API_VERSION_INVALID,
      'newest-versions': newest.slice(0, NEWEST_SHOWN),
    },
  };
}

/** `raw` is what the query parser produced: undefined, a string, or an array when repeated. */
export function checkApiVersion(raw: unknown): VersionCheck {
  if (isApiVersion(raw)) return { ok: true, version: raw };
  return versionError(raw, NEWEST_VERSIONS);
}

/** api-versions IMDS accepts for /metadata/instance, oldest first. */
export const INSTANCE_API_VERSIONS: readonly string[] = Object.freeze([
  '2017-03-01',
  '2017-04-02',
  '2017-08-01',
  '2017-10-01',
  '2017-12-01',
  '2018-02-01',
  '2018-04-02',
  '2018-10-01',
  '2019-02-01',
  '2019-03-11',
  '2019-04-30',
  '2019-06-01',
  '2019-06-04',
  '2019-08-01',
  '2019-08-15',
  '2019-11-01',
  '2020-06-01',
  '2020-07-15',
  '2020-09-01',
  '2020-10-01',
  '2020-12-01',
  '2021-01-01',
  '2021-02-01',
  '2021-03-01',
  '2021-05-01',
  '2021-08-01',
  '2021-10-01',
  '2021-11-01',
  '2021-11-15',
  '2021-12-13',
  '2023-07-01',
]);

const INSTANCE_SET: ReadonlySet<string> = new Set(INSTANCE_API_VERSIONS);
const INSTANCE_NEWEST: readonly string[] = Object.freeze([...INSTANCE_API_VERSIONS].reverse());

export function checkInstanceApiVersion(raw: unknown): { ok: true; version: string } | { ok: false; body: ImdsErrorBody } {
  if (typeof raw === 'string' && INSTANCE_SET.has(raw)) return { ok: true, version: raw };
  return versionError(raw, INSTANCE_NEWEST);
}
