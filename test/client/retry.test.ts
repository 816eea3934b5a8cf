import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_RETRY, ImdsError, ImdsProtocolError, ImdsUnavailableError, backoffMs, retryAfterMs } from '../../src/client/index.js';

describe('backoffMs', () => {
  it('doubles from baseDelayMs, capped at maxDelayMs, scaled by full jitter', () => {
    const top = (n: number): number => backoffMs(DEFAULT_RETRY, n, () => 0.999999);
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(top), [499, 999, 1999, 3999, 7999, 9999, 9999]);
    assert.equal(
      backoffMs(DEFAULT_RETRY, 3, () => 0),
      0,
    );
    assert.equal(
      backoffMs(DEFAULT_RETRY, 3, () => 0.5),
      1000,
    );
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it('reads seconds and HTTP dates, within bounds', () => {
    assert.equal(retryAfterMs('3', now), 3000);
    assert.equal(retryAfterMs('0.5', now), 500);
    assert.equal(retryAfterMs('Tue, 01 Jan 2030 00:00:07 GMT', now), 7000);
    assert.equal(retryAfterMs('Mon, 31 Dec 2029 23:00:00 GMT', now), 0);
    assert.equal(retryAfterMs('86400', now), 60_000);
  });
  it('ignores an absent or unreadable header', () => {
    assert.equal(retryAfterMs(null, now), undefined);
    assert.equal(retryAfterMs('', now), undefined);
    assert.equal(retryAfterMs('soon', now), undefined);
  });
});

describe('error types', () => {
  it('carry what callers branch on', () => {
    const e = new ImdsError(400, 'Bad request', { error: 'Bad request' });
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'ImdsError');
    assert.equal(e.message, 'IMDS answered 400: Bad request');
    assert.equal(e.attempts, 1);
    const cause = new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') });
    const u = new ImdsUnavailableError(5, cause);
    assert.equal(u.name, 'ImdsUnavailableError');
    assert.equal(u.cause, cause);
    assert.match(u.message, /5 attempts: fetch failed \(ECONNREFUSED\)/);
    const p = new ImdsProtocolError('bad', '{');
    assert.equal(p.name, 'ImdsProtocolError');
    assert.equal(p.body, '{');
  });
});
