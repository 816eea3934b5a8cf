// Types for build-for-tests.mjs, which tests import to build the CLI into a folder of their own.
export interface TestBuild {
  /** The folder: src/ compiled, package.json, scenarios, dist and node_modules linked beside it. */
  dir: string;
  /** The CLI's entry point in it. */
  cli: string;
  remove(): void;
}
export function buildForTests(root: string): Promise<TestBuild>;
