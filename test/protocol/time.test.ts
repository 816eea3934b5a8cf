import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ProtocolError, formatIso, formatRfc1123, parseEventTime } from '../../src/protocol/time.js';

const SEED_MS = Date.UTC(2016, 8, 19, 18, 29, 47);
const SEED2_MS = Date.UTC(2022, 3, 11, 22, 26, 58);

describe('formatRfc1123', () => {
  it('formats the seed example', () => {
    assert.equal(formatRfc1123(SEED_MS), 'Mon, 19 Sep 2016 18:29:47 GMT');
    assert.equal(formatRfc1123(SEED2_MS), 'Mon, 11 Apr 2022 22:26:58 GMT');
  });

  it('uses a two-digit day and truncates milliseconds', () => {
    assert.equal(formatRfc1123(Date.UTC(2024, 0, 5, 1, 2, 3, 999)), 'Fri, 05 Jan 2024 01:02:03 GMT');
  });

  it('rejects non-finite times', () => {
    assert.throws(() => formatRfc1123(Number.NaN), RangeError);
    assert.throws(() => formatRfc1123(Number.POSITIVE_INFINITY), RangeError);
  });
});

describe('formatIso', () => {
  it('is ISO 8601 with Z', () => {
    assert.equal(formatIso(SEED_MS + 123), '2016-09-19T18:29:47.123Z');
  });
});

describe('parseEventTime', () => {
  it('gives null for an empty NotBefore (Started events)', () => {
    assert.equal(parseEventTime(''), null);
    assert.equal(parseEventTime('   '), null);
  });

  it('parses the seed RFC 1123 examples', () => {
    assert.equal(parseEventTime('Mon, 19 Sep 2016 18:29:47 GMT'), SEED_MS);
    assert.equal(parseEventTime('Mon, 11 Apr 2022 22:26:58 GMT'), SEED2_MS);
  });

  it('tolerates a missing weekday, UTC, +0000 and surrounding whitespace', () => {
    assert.equal(parseEventTime('19 Sep 2016 18:29:47 GMT'), SEED_MS);
    assert.equal(parseEventTime('Mon, 19 Sep 2016 18:29:47 UTC'), SEED_MS);
    assert.equal(parseEventTime('Mon, 19 Sep 2016 18:29:47 +0000'), SEED_MS);
    assert.equal(parseEventTime('  Mon, 19 Sep 2016 18:29:47 GMT\n'), SEED_MS);
    assert.equal(parseEventTime('Fri, 9 Sep 2016 18:29:47 GMT'), Date.UTC(2016, 8, 9, 18, 29, 47));
  });

  it('parses ISO 8601 forms', () => {
    assert.equal(parseEventTime('2016-09-19T18:29:47Z'), SEED_MS);
    assert.equal(parseEventTime('2016-09-19T18:29:47.250Z'), SEED_MS + 250);
    assert.equal(parseEventTime('2016-09-19T18:29:47.1234567Z'), SEED_MS + 123);
    assert.equal(parseEventTime('2016-09-19T20:29:47+02:00'), SEED_MS);
    assert.equal(parseEventTime('2016-09-19T13:59:47-04:30'), SEED_MS);
    assert.equal(parseEventTime('2016-09-19T18:29:47'), SEED_MS, 'no zone is UTC');
    assert.equal(parseEventTime('2016-09-19 18:29:47Z'), SEED_MS);
  });

  it('handles leap days', () => {
    assert.equal(parseEventTime('Thu, 29 Feb 2024 00:00:00 GMT'), Date.UTC(2024, 1, 29));
    assert.equal(parseEventTime('2000-02-29T00:00:00Z'), Date.UTC(2000, 1, 29));
  });

  const rejected = [
    'tomorrow',
    'now',
    '0',
    '1474309787',
    'Mon, 19 Sep 2016',
    'Mon 19 September 2016 18:29:47 GMT',
    '2016-09-19',
    '2016/09/19 18:29:47',
    'Mon, 19 Sep 2016 18:29:47 PST',
    '2016-09-19T18:29:47Zjunk',
  ];
  for (const text of rejected) {
    it(`rejects ${JSON.stringify(text)} naming the text`, () => {
      assert.throws(
        () => parseEventTime(text),
        (e: unknown) =>
          e instanceof ProtocolError &&
          e.name === 'ProtocolError' &&
          e.message === `NotBefore ${JSON.stringify(text)} is neither RFC 1123 nor ISO 8601`,
      );
    });
  }

  const impossible = [
    'Tue, 30 Feb 2016 10:00:00 GMT',
    'Mon, 19 Sep 2016 25:00:00 GMT',
    'Mon, 19 Sep 2016 18:60:00 GMT',
    'Mon, 19 Sep 2016 18:29:60 GMT',
    '2015-02-29T00:00:00Z',
    '2016-13-01T00:00:00Z',
    '2016-00-10T00:00:00Z',
    '2016-09-31T00:00:00Z',
    '2016-09-19T24:00:00Z',
    '2016-09-19T18:29:47+24:00',
  ];
  for (const text of impossible) {
    it(`rejects impossible ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseEventTime(text),
        (e: unknown) => e instanceof ProtocolError && e.message.includes(JSON.stringify(text)),
      );
    });
  }

  it('rejects a weekday that does not match the date', () => {
    assert.throws(
      () => parseEventTime('Tue, 19 Sep 2016 18:29:47 GMT'),
      (e: unknown) => e instanceof ProtocolError && e.message.includes('"Tue, 19 Sep 2016 18:29:47 GMT"') && e.message.includes('Mon'),
    );
  });

  it('round-trips formatRfc1123 to the second (property)', () => {
    const min = Date.UTC(1000, 0, 1);
    const max = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
    fc.assert(
      fc.property(fc.integer({ min, max }), (t) => {
        assert.equal(parseEventTime(formatRfc1123(t)), Math.floor(t / 1000) * 1000);
      }),
      { numRuns: 2000 },
    );
  });

  it('round-trips formatIso exactly (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }), (t) => {
        assert.equal(parseEventTime(formatIso(t)), t);
      }),
      { numRuns: 1000 },
    );
  });

  it('either returns a number/null or throws ProtocolError for any string (property)', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        try {
          const r = parseEventTime(s);
          assert.ok(r === null || Number.isFinite(r));
        } catch (e) {
          assert.ok(e instanceof ProtocolError);
        }
      }),
    );
  });
});
