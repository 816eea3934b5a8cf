// Headless Chromium for the dashboard tests: Debian's chromium driven by playwright-core.
import assert from 'node:assert/strict';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

/** `FOREWARN_CHROMIUM` names another binary; Debian's package installs this one. */
export const CHROMIUM = process.env.FOREWARN_CHROMIUM ?? '/usr/bin/chromium';

/** Where the tests leave their screenshots; docs/images holds the ones worth keeping. */
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-results/dashboard/', import.meta.url));

// Without the networking flags Chromium keeps calling Google's hosts, which this network refuses.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumUnavailable(): string | undefined {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return undefined;
  } catch {
    return `no Chromium at ${CHROMIUM} (install Debian's chromium package, or set FOREWARN_CHROMIUM)`;
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core's WCAG 2 A and AA rules on the page as it stands. The context needs bypassCSP. */
export async function accessibilityViolations(page: Page): Promise<AxeViolation[]> {
  const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
  await page.addScriptTag({ path: axePath });
  return page.evaluate(async () => {
    const page = globalThis as unknown as {
      document: unknown;
      axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> };
    };
    const result = await page.axe.run(page.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
}

/** No WCAG 2 A or AA violations on the page as it stands, as axe-core checks them. */
export async function assertAccessible(page: Page): Promise<void> {
  const violations = await accessibilityViolations(page);
  assert.deepEqual(violations, [], JSON.stringify(violations, null, 2));
}
