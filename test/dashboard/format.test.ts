// How the page reads times: countdowns stay short however far off a time is.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countdown, dateTime, DAYS_AFTER_MS, monthDay } from '../../src/dashboard/format.js';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;

describe('countdown', () => {
  it('reads seconds, minutes and hours up to 48 h, as before', () => {
    assert.equal(countdown(0), 'due');
    assert.equal(countdown(-5 * SECOND), 'due');
    assert.equal(countdown(45 * SECOND), '45s');
    assert.equal(countdown(14 * 60 * SECOND + 5 * SECOND), '14m 05s');
    assert.equal(countdown(2 * HOUR + 3 * 60 * SECOND), '2h 03m');
    assert.equal(countdown(DAYS_AFTER_MS), '48h 00m');
  });

  it('reads days and hours past 48 h, such as degraded hardware’s week of notice', () => {
    assert.equal(countdown(DAYS_AFTER_MS + SECOND), '2d 00h');
    assert.equal(countdown(7 * DAY), '7d 00h');
    assert.equal(countdown(7 * DAY + 4 * HOUR + 59 * 60 * SECOND), '7d 04h');
    assert.equal(countdown(30 * DAY), '30d 00h');
  });

  it('reads whole days past 30 days, never hundreds of thousands of hours', () => {
    assert.equal(countdown(30 * DAY + SECOND), '30 days');
    assert.equal(countdown(999 * DAY), '999 days');
    assert.equal(countdown(1000 * DAY), '1,000 days');
    const to2099 = Date.parse('2099-01-01T00:00:00Z') - Date.parse('2026-11-27T10:50:18Z');
    assert.equal(countdown(to2099), '26,332 days');
  });
});

describe('dates', () => {
  it('dateTime is to the minute, in UTC', () => {
    assert.equal(dateTime(Date.parse('2099-01-01T00:00:59.999Z')), '2099-01-01 00:00 UTC');
  });

  it('monthDay labels a tick days apart', () => {
    assert.equal(monthDay(Date.parse('2026-12-04T00:00:00Z')), '12-04');
  });
});
