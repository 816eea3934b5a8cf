// The built-in scenarios: scenarios/*.yaml at the package root, shipped with the package.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Scenario } from './format.js';
import { loadScenarioFile } from './load.js';

/** The same relative path from src/emulator/scenarios and dist/emulator/scenarios. */
export const SCENARIOS_DIR = fileURLToPath(new URL('../../../scenarios/', import.meta.url));

const BUILTIN_NAME = /^[a-z0-9][a-z0-9-]*$/;

let cache: Map<string, Scenario> | undefined;

/** Every built-in, by name, in name order. A broken built-in is our bug, so it throws. */
export function builtinScenarios(): Scenario[] {
  if (!cache) {
    const files = readdirSync(SCENARIOS_DIR)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    cache = new Map();
    for (const file of files) {
      const scenario = loadScenarioFile(join(SCENARIOS_DIR, file));
      cache.set(scenario.name, scenario);
    }
  }
  return [...cache.values()];
}

export function builtinScenarioNames(): string[] {
  return builtinScenarios().map((s) => s.name);
}

export function loadBuiltinScenario(name: string): Scenario | undefined {
  if (!BUILTIN_NAME.test(name)) return undefined;
  return builtinScenarios().find((s) => s.name === name);
}
