import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStartRequests, type StartRequestsParse } from '../../src/protocol/approval.js';

function err(body: string | Uint8Array): string {
  const r = parseStartRequests(body);
  assert.equal(r.ok, false, `expected an error for ${String(body)}`);
  return r.ok ? '' : r.error;
}

function ids(body: string | Uint8Array): string[] {
  const r = parseStartRequests(body);
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r.eventIds;
}

describe('parseStartRequests: valid bodies', () => {
  it('accepts one id', () => {
    assert.deepEqual(ids('{"StartRequests":[{"EventId":"A"}]}'), ['A']);
  });

  it('accepts several ids in order', () => {
    assert.deepEqual(ids('{"StartRequests":[{"EventId":"A"},{"EventId":"B"},{"EventId":"C"}]}'), ['A', 'B', 'C']);
  });

  it('returns duplicates once, first-seen order', () => {
    assert.deepEqual(ids('{"StartRequests":[{"EventId":"B"},{"EventId":"A"},{"EventId":"B"},{"EventId":"A"}]}'), ['B', 'A']);
  });

  it('ignores unknown properties', () => {
    assert.deepEqual(ids('{"StartRequests":[{"EventId":"A","Extra":1}],"Other":true}'), ['A']);
  });

  it('accepts bytes, whitespace and a UTF-8 BOM in bytes', () => {
    assert.deepEqual(ids(new TextEncoder().encode(' {"StartRequests":[{"EventId":"Å"}]} \n')), ['Å']);
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"StartRequests":[{"EventId":"A"}]}')]);
    assert.deepEqual(ids(bom), ['A']);
  });

  it('parses a body over 64 KiB without throwing (limits are the HTTP layer’s job)', () => {
    const entries = Array.from({ length: 3000 }, (_, i) => ({ EventId: `evt-${i}-${'x'.repeat(20)}` }));
    const body = JSON.stringify({ StartRequests: entries });
    assert.ok(body.length > 65536);
    assert.equal(ids(body).length, 3000);
    assert.equal(ids(Buffer.from(body)).length, 3000);
  });
});

describe('parseStartRequests: errors', () => {
  it('empty body', () => {
    const want = 'Request body is empty; expected {"StartRequests":[{"EventId":"..."}]}';
    assert.equal(err(''), want);
    assert.equal(err('  \n'), want);
    assert.equal(err(new Uint8Array()), want);
  });

  it('invalid JSON', () => {
    assert.match(err('{"StartRequests":'), /^Request body is not valid JSON: .+/);
    assert.match(err('not json'), /^Request body is not valid JSON: .+/);
  });

  it('invalid UTF-8', () => {
    assert.match(err(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), /^Request body is not valid JSON: .+/);
  });

  it('top level not an object', () => {
    const want = 'Request body must be a JSON object with a StartRequests array';
    for (const body of ['[]', '[{"EventId":"A"}]', 'null', '"x"', '42', 'true']) assert.equal(err(body), want, body);
  });

  it('StartRequests missing', () => {
    assert.equal(err('{}'), 'StartRequests is required');
    assert.equal(err('{"EventId":"A"}'), 'StartRequests is required');
  });

  it('StartRequests not an array names the type', () => {
    assert.equal(err('{"StartRequests":"A"}'), 'StartRequests must be an array, got string');
    assert.equal(err('{"StartRequests":{"EventId":"A"}}'), 'StartRequests must be an array, got object');
    assert.equal(err('{"StartRequests":null}'), 'StartRequests must be an array, got null');
    assert.equal(err('{"StartRequests":7}'), 'StartRequests must be an array, got number');
  });

  it('StartRequests empty', () => {
    assert.equal(err('{"StartRequests":[]}'), 'StartRequests must contain at least one entry');
  });

  it('element not an object names its index', () => {
    assert.equal(err('{"StartRequests":[{"EventId":"A"},{"EventId":"B"},"C"]}'), 'StartRequests[2] must be an object with an EventId');
    assert.equal(err('{"StartRequests":[null]}'), 'StartRequests[0] must be an object with an EventId');
    assert.equal(err('{"StartRequests":[["A"]]}'), 'StartRequests[0] must be an object with an EventId');
  });

  it('EventId missing', () => {
    assert.equal(err('{"StartRequests":[{}]}'), 'StartRequests[0].EventId is required');
    assert.equal(err('{"StartRequests":[{"EventId":"A"},{"Id":"B"}]}'), 'StartRequests[1].EventId is required');
  });

  it('EventId not a string names the type', () => {
    assert.equal(err('{"StartRequests":[{"EventId":5}]}'), 'StartRequests[0].EventId must be a string, got number');
    assert.equal(err('{"StartRequests":[{"EventId":null}]}'), 'StartRequests[0].EventId must be a string, got null');
    assert.equal(err('{"StartRequests":[{"EventId":["A"]}]}'), 'StartRequests[0].EventId must be a string, got array');
  });

  it('EventId empty', () => {
    assert.equal(err('{"StartRequests":[{"EventId":""}]}'), 'StartRequests[0].EventId must not be empty');
  });

  it('property names are case-sensitive', () => {
    assert.equal(err('{"startRequests":[{"EventId":"A"}]}'), 'StartRequests is required');
    assert.equal(err('{"STARTREQUESTS":[{"EventId":"A"}]}'), 'StartRequests is required');
    assert.equal(err('{"StartRequests":[{"eventId":"A"}]}'), 'StartRequests[0].EventId is required');
    assert.equal(err('{"StartRequests":[{"EventID":"A"}]}'), 'StartRequests[0].EventId is required');
  });

  it('is not fooled by __proto__ keys', () => {
    assert.equal(err('{"__proto__":{"StartRequests":[{"EventId":"A"}]}}'), 'StartRequests is required');
    assert.equal(err('{"StartRequests":[{"__proto__":{"EventId":"A"}}]}'), 'StartRequests[0].EventId is required');
    assert.equal(({} as Record<string, unknown>)['StartRequests'], undefined, 'no prototype pollution');
  });

  it('survives deeply nested JSON', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const r = parseStartRequests(`{"StartRequests":${deep}}`);
    assert.equal(r.ok, false);
  });
});

function wellFormed(r: StartRequestsParse): void {
  if (r.ok) {
    assert.ok(r.eventIds.length > 0);
    for (const id of r.eventIds) assert.ok(typeof id === 'string' && id.length > 0);
    assert.equal(new Set(r.eventIds).size, r.eventIds.length);
  } else {
    assert.ok(typeof r.error === 'string' && r.error.length > 0);
  }
}

describe('parseStartRequests: fuzz', () => {
  it('never throws on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => wellFormed(parseStartRequests(s))),
      { numRuns: 2000 },
    );
  });

  it('never throws on arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => wellFormed(parseStartRequests(JSON.stringify(v) ?? ''))),
      { numRuns: 2000 },
    );
  });

  it('never throws on arbitrary values serialized, including proto keys', () => {
    fc.assert(
      fc.property(fc.anything({ withObjectString: true, withNullPrototype: true }), (v) => {
        let text: string;
        try {
          text = JSON.stringify(v) ?? '';
        } catch {
          return; // BigInt and the like cannot be sent over the wire
        }
        wellFormed(parseStartRequests(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws on near-valid bodies', () => {
    const entry = fc.oneof(
      fc.record({ EventId: fc.oneof(fc.string(), fc.jsonValue()) }),
      fc.dictionary(fc.constantFrom('EventId', 'eventId', '__proto__', 'constructor'), fc.jsonValue()),
      fc.jsonValue(),
    );
    const body = fc.oneof(
      fc.record({ StartRequests: fc.array(entry) }),
      fc.record({ StartRequests: fc.jsonValue() }),
      fc.dictionary(fc.constantFrom('StartRequests', '__proto__', 'startRequests'), fc.array(entry)),
    );
    fc.assert(
      fc.property(body, (b) => wellFormed(parseStartRequests(JSON.stringify(b)))),
      { numRuns: 2000 },
    );
  });

  it('never throws on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => wellFormed(parseStartRequests(bytes))),
      { numRuns: 2000 },
    );
  });

  it('accepts any non-empty string ids and returns them deduplicated', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1 }), { minLength: 1 }), (list) => {
        const r = parseStartRequests(JSON.stringify({ StartRequests: list.map((EventId) => ({ EventId })) }));
        assert.ok(r.ok);
        assert.deepEqual(r.eventIds, [...new Set(list)]);
      }),
    );
  });
});
