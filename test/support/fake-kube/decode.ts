// A request body decoded into its kind as kube-apiserver's JSON decoder does (sigs.k8s.io/json, a fork
// of encoding/json, into the typed Go struct): the schema is @kubernetes/client-node's generated models.
//   - A value of the wrong JSON type is a type error, `json: cannot unmarshal string into Go struct field
//     LeaseSpec.spec.leaseDurationSeconds of type int32`: the first one is kept and decoding goes on.
//   - Types with their own UnmarshalJSON (Time, MicroTime, IntOrString, Quantity) fail at once with
//     their own error, e.g. Go's time.Parse error for a MicroTime without six fractional digits.
//   - An unknown field (case matters) is a strict error, `unknown field "spec.foo"`, reported only when
//     nothing else failed; fieldValidation decides what becomes of it (rest.ts).
//   - `null` is "unset". Times come back as the server writes them (UTC; Time in whole seconds,
//     MicroTime with six digits) and unknown fields are dropped: what the server would store.
// README.md, "Decoding", cites each rule.
import * as k8s from '@kubernetes/client-node';
import { formatMicroTime, formatTime, parseGoTime, RFC3339, RFC3339_MICRO } from './gotime.js';

type Json = Record<string, unknown>;

/** A client-node model's attribute, as its generated `getAttributeTypeMap()` lists it. */
export interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

export type Model = { getAttributeTypeMap(): Attribute[] };

/** One problem, by path, as the manifest checks (FakeKube.apply) report it. */
export interface DecodeIssue {
  field: string;
  message: string;
}

export interface Decoded {
  /** The object as the server would hold it (only meaningful when `error` is null). */
  object: Json;
  /** What the server's decoder answers, refusing the body: null when it decodes. */
  error: string | null;
  /** Unknown fields, as `unknown field "path"`, in the order met. */
  strict: string[];
  /** Every problem found (type errors, bad times, unknown fields), for manifest checks. */
  issues: DecodeIssue[];
}

/** Fields the models type as strings that hold resource.Quantity values, which JSON may also write as numbers. */
const QUANTITIES = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1NodeStatus.capacity',
  'V1NodeStatus.allocatable',
  'V1PodSpec.overhead',
]);
/** resource.ParseQuantity's error (k8s.io/apimachinery/pkg/api/resource/quantity.go, ErrFormatWrong). */
const QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** Go's zero time.Time (0001-01-01T00:00:00Z): IsZero, so the server writes it back as null (unset). */
const GO_ZERO_MS = -62135596800000;

function model(name: string): Model | undefined {
  const found = (k8s as unknown as Record<string, unknown>)[name];
  return typeof found === 'function' && 'getAttributeTypeMap' in found ? (found as unknown as Model) : undefined;
}

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A model class name as Go names the type: V1LeaseSpec → {pkg: v1, name: LeaseSpec}; CoreV1Event → v1.Event. */
function goStruct(className: string): { name: string; type: string } {
  const m = /^(?:[A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z].*)$/.exec(className);
  return m ? { name: m[2]!, type: `${m[1]!.toLowerCase()}.${m[2]!}` } : { name: className, type: className };
}

/** The Go type the server decodes a model attribute into (named string types are approximated as string). */
function goType(type: string, format: string): string {
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return `[]${goType(array[1]!, '')}`;
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return `map[string]${goType(map[1]!, '')}`;
  if (type === 'string') return 'string';
  if (type === 'boolean') return 'bool';
  if (type === 'number') return format === 'int32' ? 'int32' : format === 'int64' ? 'int64' : 'float64';
  if (type === 'Date') return 'v1.Time';
  if (type === 'V1MicroTime') return 'v1.MicroTime';
  if (type === 'IntOrString') return 'intstr.IntOrString';
  if (type === 'any' || type === 'object') return 'interface {}';
  return goStruct(type).type;
}

/** How encoding/json names a JSON value in a type error. */
function jsonKind(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** The friendlier wording of the manifest checks. */
function describe(v: unknown): string {
  if (Array.isArray(v)) return 'list';
  if (isRecord(v)) return 'mapping';
  return typeof v;
}

class Fatal extends Error {}

interface Context {
  /** Path for people and strict errors: `spec.containers[0].image`. */
  path: string;
  /** encoding/json's FieldStack: the JSON names of the struct fields entered, no indices. */
  stack: string[];
  /** The innermost Go struct a field of which was entered; null at the top. */
  struct: string | null;
}

class Decoder {
  typeError: string | null = null;
  readonly strict: string[] = [];
  readonly issues: DecodeIssue[] = [];

  #typeError(value: unknown, goTypeName: string, ctx: Context, expected: string, literal = false): void {
    const kind = literal && typeof value === 'number' ? `number ${String(value)}` : jsonKind(value);
    const where = ctx.struct !== null ? `Go struct field ${ctx.struct}.${ctx.stack.join('.')}` : 'Go value';
    this.typeError ??= `json: cannot unmarshal ${kind} into ${where} of type ${goTypeName}`;
    this.issues.push({ field: ctx.path, message: `expected ${expected}, got ${describe(value)}` });
  }

  #fatal(message: string, ctx: Context): never {
    this.issues.push({ field: ctx.path, message });
    throw new Fatal(message);
  }

  /** The decoded value, or undefined to leave the field unset. */
  value(value: unknown, type: string, format: string, ctx: Context, quantity = false): unknown {
    if (value === null || value === undefined) return undefined;
    if (type === 'any' || type === 'object') return structuredClone(value);
    if (type === 'V1MicroTime' || (type === 'Date' && format !== 'date')) return this.#time(value, type === 'V1MicroTime', ctx);
    const array = /^Array<(.+)>$/.exec(type);
    if (array) {
      if (!Array.isArray(value)) return this.#typeError(value, goType(type, format), ctx, 'a list');
      return value.map((item, i) => this.value(item, array[1]!, '', { ...ctx, path: `${ctx.path}[${i}]` }, quantity) ?? null);
    }
    const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
    if (map) {
      if (!isRecord(value)) return this.#typeError(value, goType(type, format), ctx, 'a mapping');
      const out: Json = {};
      for (const [key, item] of Object.entries(value)) {
        const decoded = this.value(item, map[1]!, '', { ...ctx, path: join(ctx.path, key) }, quantity);
        if (decoded !== undefined) out[key] = decoded;
      }
      return out;
    }
    if (quantity && type === 'string') {
      if (typeof value !== 'string' && typeof value !== 'number') this.#fatal(QUANTITY_ERROR, ctx);
      if (!QUANTITY.test(String(value).trim())) this.#fatal(QUANTITY_ERROR, ctx);
      return value;
    }
    if (type === 'string') {
      if (typeof value !== 'string') return this.#typeError(value, 'string', ctx, 'string');
      return value;
    }
    if (type === 'boolean') {
      if (typeof value !== 'boolean') return this.#typeError(value, 'bool', ctx, 'boolean');
      return value;
    }
    if (type === 'number') {
      const go = goType(type, format);
      if (typeof value !== 'number') return this.#typeError(value, go, ctx, 'number');
      if (go === 'float64') return value;
      const [min, max] = go === 'int32' ? [-(2 ** 31), 2 ** 31 - 1] : [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
      if (!Number.isInteger(value) || value < min || value > max) return this.#typeError(value, go, ctx, 'integer', true);
      return value;
    }
    if (type === 'IntOrString') {
      // intstr.IntOrString.UnmarshalJSON: a quoted string, else json.Unmarshal into an int32.
      if (typeof value === 'string') return value;
      if (typeof value !== 'number') this.#fatal(`json: cannot unmarshal ${jsonKind(value)} into Go value of type int32`, ctx);
      if (!Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1) {
        this.#fatal(`json: cannot unmarshal number ${String(value)} into Go value of type int32`, ctx);
      }
      return value;
    }
    const found = model(type);
    if (found === undefined) return structuredClone(value); // a type the models do not describe: taken as is
    if (!isRecord(value)) return this.#typeError(value, goType(type, format), ctx, 'a mapping');
    const attributes = found.getAttributeTypeMap();
    const struct = goStruct(type).name;
    const out: Json = {};
    for (const [key, item] of Object.entries(value)) {
      const path = join(ctx.path, key);
      const attribute = attributes.find((a) => a.baseName === key);
      if (attribute === undefined) {
        this.strict.push(`unknown field ${JSON.stringify(path)}`);
        this.issues.push({ field: path, message: 'unknown field' });
        continue;
      }
      const decoded = this.value(
        item,
        attribute.type,
        attribute.format,
        { path, stack: [...ctx.stack, key], struct },
        QUANTITIES.has(`${type}.${key}`),
      );
      if (decoded !== undefined) out[key] = decoded;
    }
    return out;
  }

  /** metav1.Time / metav1.MicroTime UnmarshalJSON: null is unset; a string must parse with the type's layout. */
  #time(value: unknown, micro: boolean, ctx: Context): string | undefined {
    if (typeof value !== 'string') this.#fatal(`json: cannot unmarshal ${jsonKind(value)} into Go value of type string`, ctx);
    const parsed = parseGoTime(micro ? RFC3339_MICRO : RFC3339, value);
    if (!parsed.ok) this.#fatal(parsed.error, ctx);
    if (parsed.instant.ms === GO_ZERO_MS && parsed.instant.micros === 0) return undefined;
    return micro ? formatMicroTime(parsed.instant) : formatTime(parsed.instant);
  }
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** Decodes `body` (already parsed JSON) as the model `className` (V1Lease, CoreV1Event, …). */
export function decode(body: unknown, className: string): Decoded {
  const decoder = new Decoder();
  let object: Json = {};
  let fatal: string | null = null;
  try {
    const decoded = decoder.value(body, className, '', { path: '', stack: [], struct: null });
    object = isRecord(decoded) ? decoded : {};
  } catch (err) {
    if (!(err instanceof Fatal)) throw err;
    fatal = err.message;
  }
  // As encoding/json: an UnmarshalJSON error ends decoding at once and wins; else the first type error.
  return {
    object,
    error: fatal ?? decoder.typeError,
    strict: (fatal ?? decoder.typeError) !== null ? [] : decoder.strict,
    issues: decoder.issues,
  };
}
