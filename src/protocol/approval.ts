// Validates the approval POST body. Never throws: every input yields ok or a message naming the problem.

export type StartRequestsParse = { ok: true; eventIds: string[] } | { ok: false; error: string };

const EMPTY_BODY = 'Request body is empty; expected {"StartRequests":[{"EventId":"..."}]}';

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// Own properties only, so a key inherited from a prototype never counts.
function own(obj: Record<string, unknown>, key: string): { present: boolean; value: unknown } {
  return Object.hasOwn(obj, key) ? { present: true, value: obj[key] } : { present: false, value: undefined };
}

function fail(error: string): StartRequestsParse {
  return { ok: false, error };
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function decode(body: unknown): { text: string } | { error: string } {
  if (typeof body === 'string') return { text: body };
  if (body instanceof Uint8Array) {
    try {
      return { text: new TextDecoder('utf-8', { fatal: true }).decode(body) };
    } catch (e) {
      return { error: `Request body is not valid JSON: ${messageOf(e)}` };
    }
  }
  return { error: 'Request body must be text or bytes' };
}

function validate(doc: unknown): StartRequestsParse {
  if (!isPlainObject(doc)) return fail('Request body must be a JSON object with a StartRequests array');
  const list = own(doc, 'StartRequests');
  if (!list.present) return fail('StartRequests is required');
  if (!Array.isArray(list.value)) return fail(`StartRequests must be an array, got ${kindOf(list.value)}`);
  if (list.value.length === 0) return fail('StartRequests must contain at least one entry');

  const seen = new Set<string>();
  const ids: string[] = [];
  for (const [i, entry] of (list.value as unknown[]).entries()) {
    if (!isPlainObject(entry)) return fail(`StartRequests[${i}] must be an object with an EventId`);
    const id = own(entry, 'EventId');
    if (!id.present) return fail(`StartRequests[${i}].EventId is required`);
    if (typeof id.value !== 'string') {
      return fail(`StartRequests[${i}].EventId must be a string, got ${kindOf(id.value)}`);
    }
    if (id.value === '') return fail(`StartRequests[${i}].EventId must not be empty`);
    if (!seen.has(id.value)) {
      seen.add(id.value);
      ids.push(id.value);
    }
  }
  return { ok: true, eventIds: ids };
}

export function parseStartRequests(body: string | Uint8Array): StartRequestsParse {
  try {
    const decoded = decode(body);
    if ('error' in decoded) return fail(decoded.error);
    if (decoded.text.trim() === '') return fail(EMPTY_BODY);
    let doc: unknown;
    try {
      doc = JSON.parse(decoded.text);
    } catch (e) {
      return fail(`Request body is not valid JSON: ${messageOf(e)}`);
    }
    return validate(doc);
  } catch (e) {
    // Unreachable for JSON input; kept so a surprise (e.g. stack exhaustion) still gives a 400, not a 500.
    return fail(`Request body could not be read: ${messageOf(e)}`);
  }
}
