import { test } from 'node:test';
import assert from 'node:assert/strict';
import { etagOf, ifNoneMatchHits } from '../../src/protocol/etag.js';

test('the ETag is the quoted incarnation', () => {
  assert.equal(etagOf(7), '"7"');
});

test('If-None-Match names the incarnation quoted, bare, weak, in a list, or *', () => {
  for (const header of ['"7"', '7', 'W/"7"', 'w/"7"', '"3", "7"', ' 5 ,7', '*']) assert.ok(ifNoneMatchHits(header, 7), header);
  for (const header of ['"8"', '', '"77"', 'W/8', '"7', '7"', 'x7']) assert.ok(!ifNoneMatchHits(header, 7), header);
});
