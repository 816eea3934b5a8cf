// The one escaper for what record and replay print: control characters and bidi overrides become visible escapes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printable, printableJson } from '../../src/shared/printable.js';

describe('printable', () => {
  it('escapes C0, DEL, C1 and the bidi controls, and leaves the rest', () => {
    assert.equal(printable('a\u001b[2Jb'), 'a\\x1b[2Jb');
    assert.equal(printable('x\r\ny\tz\u0000'), 'x\\r\\ny\\tz\\x00');
    assert.equal(printable('\u007f\u0085\u009b'), '\\x7f\\x85\\x9b');
    assert.equal(printable('\u202a\u202e\u2066\u2069\u2028\u2029'), '\\u202a\\u202e\\u2066\\u2069\\u2028\\u2029');
    assert.equal(printable('Forewarn – été, 日本, C:\\path "q"'), 'Forewarn – été, 日本, C:\\path "q"');
  });

  it('clips a long text, saying how much was left out', () => {
    assert.equal(printable('abcdef', 3), 'abc… (3 more characters)');
    assert.equal(printable('abc', 3), 'abc');
  });

  it('JSON keeps its value and shows no control character', () => {
    const value = { id: 'E\u001b[2K\r\u009b\u202e\u2066\u007f' };
    const text = printableJson(value);
    assert.deepEqual(JSON.parse(text), value);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    assert.doesNotMatch(text, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
  });
});
