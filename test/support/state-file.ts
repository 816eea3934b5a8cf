// Reading a state file that must be refused, and finding where in it a lie stands.
import assert from 'node:assert/strict';
import { StateFileError, loadStateFile } from '../../src/emulator/state/file.js';

/** The StateFileError's message for a state file that must not load. */
export function stateFileRefusal(path: string): string {
  try {
    loadStateFile(path);
  } catch (err) {
    assert.ok(err instanceof StateFileError, String(err));
    return err.message;
  }
  assert.fail('expected the state file to be refused');
}

/** Line and column (1-based) of the first `needle` at or after `from` in the file. */
export function placeOf(text: string, needle: string, from = 0): string {
  const at = text.indexOf(needle, from);
  assert.ok(at >= 0, `${needle} is in the file`);
  const before = text.slice(0, at);
  return `${before.split('\n').length}:${at - before.lastIndexOf('\n')}`;
}
