// Temporary folders for tests, each removed once the tests that made it are done.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/**
 * A fresh folder `forewarn-NAME-XXXXXX` in the system's temp folder, removed after the tests of the file
 * (called at the top of a file) or of the suite (called in a describe body).
 */
export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `forewarn-${name}-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
