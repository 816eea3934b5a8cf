// The dashboard in real headless Chromium, against a real emulator: what a tester would click and see.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Emulator, type EmulatorOptions } from '../../src/emulator/emulator.js';
import type { VmSpec } from '../../src/emulator/engine/fleet.js';
import { assertAccessible, chromiumUnavailable, launchChromium, screenshot } from '../support/browser.js';

const FLEET: VmSpec[] = [
  { name: 'web0', tenant: 'web', tenantKind: 'availabilitySet', faultDomainCount: 3, faultDomain: 0, host: 'h1' },
  { name: 'web1', tenant: 'web', faultDomain: 1, host: 'h2' },
  { name: 'web2', tenant: 'web', faultDomain: 2, host: 'h3' },
  { name: 'db0', tenant: 'db', tenantKind: 'availabilitySet', faultDomainCount: 2, faultDomain: 0, host: 'h1' },
  { name: 'db1', tenant: 'db', faultDomain: 1, host: 'h2' },
];

/** VM names as long as a real fleet's, with no hyphen to break at: the events table cannot fit them at a desktop width. */
const LONG_NAMES: VmSpec[] = [
  { name: 'productionfrontendwesteuropevm000001', tenant: 'production-frontend', faultDomain: 0, host: 'h1' },
  { name: 'productionfrontendwesteuropevm000002', tenant: 'production-frontend', faultDomain: 1, host: 'h2' },
];

const LOOPBACK = { imds: { host: '127.0.0.1', port: 0 }, control: { host: '127.0.0.1', port: 0 } };
const UI_TIMEOUT_MS = 10_000;

let browser: Browser | undefined;
let skipReason: string | undefined;

before(async () => {
  skipReason = chromiumUnavailable();
  if (skipReason) {
    // CI installs Chromium and insists that these tests run.
    if (process.env.FOREWARN_REQUIRE_CHROMIUM === '1') throw new Error(`FOREWARN_REQUIRE_CHROMIUM=1 but ${skipReason}`);
    return;
  }
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

/** A page that records every request, so a test can check that nothing left the emulator. */
async function openPage(
  url: string,
  options: { width?: number } = {},
): Promise<{ context: BrowserContext; page: Page; requests: string[]; errors: string[] }> {
  // bypassCSP only lets the test inject axe-core; the page's own policy is checked separately.
  const context = await browser!.newContext({ viewport: { width: options.width ?? 1440, height: 1000 }, bypassCSP: true });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  return { context, page, requests, errors };
}

interface Dashboard {
  emulator: Emulator;
  controlUrl: string;
  imdsUrl: string;
  page: Page;
  requests: string[];
  errors: string[];
}

/**
 * A test on an emulator of FLEET on a manual clock (with `emulator` options), whose page is open at `width`
 * once `before` is done; the page and the emulator close after it. Skipped where Chromium cannot run.
 */
function dashboardTest(
  name: string,
  options: { emulator?: EmulatorOptions; width?: number; before?: (controlUrl: string) => Promise<unknown> },
  body: (dashboard: Dashboard) => Promise<void>,
): void {
  test(name, async (t) => {
    if (skipReason) return t.skip(skipReason);
    const emulator = await Emulator.create({ fleet: FLEET, clock: 'manual', ...options.emulator });
    try {
      const { controlUrl, imdsUrl } = await emulator.listen(LOOPBACK);
      await options.before?.(controlUrl);
      const { context, ...opened } = await openPage(`${controlUrl}/`, options.width === undefined ? {} : { width: options.width });
      try {
        await body({ emulator, controlUrl, imdsUrl, ...opened });
      } finally {
        await context.close();
      }
    } finally {
      await emulator.close();
    }
  });
}

const eventRow = (page: Page, type: string) => page.locator(`tr[data-type="${type}"]`);

/**
 * Near and far events together, as the user who reported the desktop layout had them: a restart of web1 and a
 * freeze of db1 (15 minutes' notice each), a restart of web2 set for 2099, and a hardware failure of host h1
 * (web0 and db0), whose events arrive Started.
 */
async function mixedEvents(controlUrl: string): Promise<void> {
  for (const body of [
    { type: 'restart', vms: ['web1'] },
    { type: 'freeze', vms: ['db1'] },
    { type: 'restart', vms: ['web2'], notBefore: '2099-01-01T00:00:00Z' },
    { type: 'hardware-failure', host: 'h1' },
  ]) {
    const res = await fetch(`${controlUrl}/v1/operations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 201, await res.text());
  }
}
const MIXED_EVENT_COUNT = 5;

/** The page is live and shows every event mixedEvents made. */
async function mixedEventsShown(page: Page): Promise<void> {
  await linkIs(page, 'live');
  await page
    .locator('tr[data-event]')
    .nth(MIXED_EVENT_COUNT - 1)
    .waitFor();
}

/**
 * How wide the events table is beyond its panel, and each of its buttons: whole when nothing of it
 * overflows, its label lies inside it, it lies inside the panel's visible part, and nothing covers it.
 */
async function eventButtons(page: Page): Promise<{ tableOverflow: number; buttons: { label: string; whole: boolean }[] }> {
  return page.evaluate(() => {
    interface Rect {
      left: number;
      right: number;
      top: number;
      bottom: number;
    }
    interface El {
      scrollWidth: number;
      clientWidth: number;
      textContent: string | null;
      getBoundingClientRect(): Rect;
      closest(selector: string): El | null;
    }
    const doc = (
      globalThis as unknown as {
        document: {
          querySelector(selector: string): El;
          querySelectorAll(selector: string): Iterable<El>;
          createRange(): { selectNodeContents(node: El): void; getBoundingClientRect(): Rect };
          elementFromPoint(x: number, y: number): El | null;
        };
      }
    ).document;
    const scroller = doc.querySelector('#events .scroll');
    const panel = scroller.getBoundingClientRect();
    return {
      tableOverflow: scroller.scrollWidth - scroller.clientWidth,
      buttons: [...doc.querySelectorAll('table.events button')].map((b) => {
        const box = b.getBoundingClientRect();
        const range = doc.createRange();
        range.selectNodeContents(b);
        const text = range.getBoundingClientRect();
        const checks = {
          fits: b.scrollWidth <= b.clientWidth,
          textInside: text.left >= box.left - 0.5 && text.right <= box.right + 0.5,
          inPanel: box.left >= panel.left - 0.5 && box.right <= panel.right + 0.5,
          onTop: doc.elementFromPoint((box.left + box.right) / 2, (box.top + box.bottom) / 2)?.closest('button') === b,
        };
        return { label: b.textContent ?? '', whole: Object.values(checks).every(Boolean), ...checks };
      }),
    };
  });
}
const linkIs = (page: Page, state: string) => page.locator(`[data-link="${state}"]`).waitFor();

describe('the dashboard', () => {
  dashboardTest(
    'a user restart from trigger to removal, then a rolling host update one fault domain at a time',
    {},
    async ({ controlUrl, page, requests, errors }) => {
      // 1. The page loads and goes live over the stream.
      await linkIs(page, 'live');
      await page.locator('[data-vm="web0"][data-state="running"]').waitFor();
      assert.match(await page.locator('[data-tenant="web"]').innerText(), /availabilitySet, 3 fault domains/);
      assert.match(await page.locator('[data-host="h1"]').innerText(), /shared by web, db/);

      // 2. Trigger a user restart on web0, by keyboard: tick the VM, then the Trigger button.
      await page.getByRole('checkbox', { name: 'web0' }).focus();
      await page.keyboard.press('Space');
      await page.getByRole('combobox', { name: 'Operation' }).selectOption('restart');
      await page.getByRole('button', { name: 'Trigger' }).focus();
      await page.keyboard.press('Enter');

      // 3. The event shows as Scheduled, with a countdown to NotBefore (15 minutes for a restart).
      const row = eventRow(page, 'Reboot');
      await row.and(page.locator('[data-status="Scheduled"]')).waitFor();
      assert.match(await row.locator('.countdown').innerText(), /^1[45]m \d\ds$/);
      assert.match(await row.innerText(), /User/);
      assert.match(await row.innerText(), /web0/);
      assert.match(await row.innerText(), /unknown/, 'DurationInSeconds -1 reads as unknown');
      assert.match(await row.locator('td[data-label="Approved by"]').innerText(), /nobody/);
      // The document web0 would get from IMDS, raw.
      const doc = JSON.parse(await page.locator('pre.raw[data-document-vm="web0"]').innerText()) as { Events: { EventType: string }[] };
      assert.deepEqual(
        doc.Events.map((e) => e.EventType),
        ['Reboot'],
      );
      await screenshot(page, 'scheduled');

      // 4. Approve on behalf of web0: the event Starts and the VM is rebooting.
      await row.getByRole('combobox', { name: 'Approve as' }).selectOption('web0');
      await row.getByRole('button', { name: 'Approve' }).click();
      await row.and(page.locator('[data-status="Started"]')).waitFor();
      assert.match(await row.locator('td[data-label="Approved by"]').innerText(), /web0/);
      assert.match(await row.locator('td[data-label="Status"]').innerText(), /by approval/);
      await page.locator('[data-vm="web0"][data-state="rebooting"]').waitFor();
      await screenshot(page, 'started');

      // 5. Advance the manual clock an hour: the restart is over and leaves the live rows.
      await page.getByRole('button', { name: 'Advance the clock 1 h' }).click();
      await page.locator('[data-empty="events"]').waitFor();
      await page.locator('[data-vm="web0"][data-state="running"]').waitFor();
      await page.locator('.timeline .bar.type-reboot.outcome-completed').waitFor();

      // 6. The rolling host update scenario: its fault domains follow one another on the timeline.
      await page.getByRole('combobox', { name: 'Scenario' }).selectOption('rolling-host-update');
      await page.getByRole('button', { name: 'Run scenario' }).click();
      await page.locator('[data-scenario-status="passed"]').waitFor();
      const bars = [];
      for (const vm of ['web0', 'web1', 'web2']) {
        const bar = page.locator(`[data-timeline-vm="${vm}"] .bar.type-freeze.outcome-completed`);
        await bar.waitFor();
        assert.equal(await bar.count(), 1, `one Freeze for ${vm}`);
        bars.push({ vm, start: Number(await bar.getAttribute('data-start')), end: Number(await bar.getAttribute('data-end')) });
      }
      for (let i = 1; i < bars.length; i++) {
        assert.ok(bars[i]!.start >= bars[i - 1]!.end, `FD ${i} (${bars[i]!.vm}) starts after FD ${i - 1} ends: ${JSON.stringify(bars)}`);
      }
      assert.match(await page.locator('[data-timeline-vm="web1"] .tl-label').innerText(), /FD 1/);
      await page.locator('#timeline').scrollIntoViewIfNeeded();
      await screenshot(page, 'rolling-update');

      // The page fetched nothing but its own emulator, and threw nothing.
      const foreign = requests.filter((u) => !u.startsWith(`${controlUrl}/`) && !u.startsWith('data:'));
      assert.deepEqual(foreign, []);
      assert.deepEqual(errors, []);

      // WCAG 2 A and AA, as axe-core checks them.
      await assertAccessible(page);
    },
  );

  dashboardTest(
    'drives the rest of the control API: host and tenant targets, cancel, faults, api-versions, reset',
    {},
    async ({ imdsUrl, page, errors }) => {
      await linkIs(page, 'live');
      const form = page.getByRole('form', { name: 'Trigger an operation' });

      // A freeze on host h1, which web and db share: one event per tenant, one job.
      await form.getByRole('combobox', { name: 'Operation' }).selectOption('freeze');
      await form.getByRole('radio', { name: 'A host' }).check();
      await form.getByRole('combobox', { name: 'Host' }).selectOption('h1');
      await form.getByRole('button', { name: 'Trigger' }).click();
      const freezes = page.locator('tr[data-type="Freeze"]');
      await freezes.nth(1).waitFor();
      assert.equal(await freezes.count(), 2);
      assert.deepEqual((await freezes.locator('td[data-label="Resources"]').allInnerTexts()).sort(), ['db0', 'web0']);

      // web approves its share: the job waits for db.
      const webRow = freezes.filter({ has: page.locator('td[data-label="Resources"]', { hasText: 'web0' }) });
      await webRow.getByRole('button', { name: 'Approve' }).click();
      await webRow.locator('.job', { hasText: 'web: approved' }).waitFor();
      assert.match(await webRow.locator('.job').innerText(), /db: waiting/);
      assert.equal(await webRow.getAttribute('data-status'), 'Scheduled');

      // Cancelling one event cancels the whole job.
      await webRow.getByRole('button', { name: 'Cancel' }).click();
      await page.locator('[data-empty="events"]').waitFor();
      assert.equal(await page.locator('.timeline .bar.type-freeze.outcome-cancelled').count(), 2);

      // A host update on tenant web rolls by fault domain: the page shows its progress.
      await form.getByRole('combobox', { name: 'Operation' }).selectOption('host-update');
      await form.getByRole('radio', { name: 'A tenant' }).check();
      await form.getByRole('combobox', { name: 'Tenant' }).selectOption('web');
      await form.getByRole('button', { name: 'Trigger' }).click();
      await page.locator('.rolling', { hasText: 'Host update of web: 0/3 fault domains done, FD 0 scheduled' }).waitFor();

      // The raw document at an older api-version: 2017-08-01 has no Description or EventSource.
      const docForm = page.locator('#document');
      await docForm.getByRole('combobox', { name: 'VM' }).selectOption('web1');
      await docForm.getByRole('combobox', { name: 'api-version' }).selectOption('2017-08-01');
      const raw = page.locator('pre.raw[data-document-vm="web1"]');
      await raw.filter({ hasNotText: 'Description' }).filter({ hasText: 'Freeze' }).waitFor();
      const old = JSON.parse(await raw.innerText()) as { Events: Record<string, unknown>[] };
      assert.deepEqual(Object.keys(old.Events[0]!).sort(), [
        'EventId',
        'EventStatus',
        'EventType',
        'NotBefore',
        'ResourceType',
        'Resources',
      ]);

      // A fault for web1: listed, then used up by web1's own IMDS request, live.
      const faultForm = page.getByRole('form', { name: 'Inject a fault' });
      await faultForm.getByRole('combobox', { name: 'VM' }).selectOption('web1');
      await faultForm.getByRole('combobox', { name: 'Answer with' }).selectOption('500');
      await faultForm.getByRole('button', { name: 'Inject' }).click();
      const faults = page.getByRole('list', { name: 'Pending faults' });
      await faults.getByText('web1: 500 · 1 left').waitFor();
      const res = await fetch(`${imdsUrl}/vms/web1/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
      assert.equal(res.status, 500);
      await faults.waitFor({ state: 'detached' });

      // Errors from the emulator show as they are, naming the problem.
      await form.getByRole('combobox', { name: 'Operation' }).selectOption('spot-eviction');
      await form.getByRole('radio', { name: 'A tenant' }).check();
      await form.getByRole('combobox', { name: 'Tenant' }).selectOption('db');
      await form.getByRole('button', { name: 'Trigger' }).click();
      await page.getByRole('alert').filter({ hasText: "spot-eviction applies only to Spot VMs; 'db0' is Regular" }).waitFor();

      // Reset: back to the start fleet, with no events and no history.
      await page.getByRole('button', { name: 'Reset to the start fleet' }).click();
      await page.locator('[data-empty="events"]').waitFor();
      await page.locator('.timeline .bar').first().waitFor({ state: 'detached' });
      assert.deepEqual(errors, []);
    },
  );

  dashboardTest(
    'at a phone width every part is reachable and events read as cards',
    {
      width: 390,
      before: (controlUrl) =>
        fetch(`${controlUrl}/v1/operations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'freeze', host: 'h1' }),
        }),
    },
    async ({ page }) => {
      await linkIs(page, 'live');
      const rows = page.locator('tr[data-type="Freeze"]');
      await rows.first().waitFor();
      assert.equal(await rows.count(), 2, 'a shared host gives each tenant its own event');
      // Nothing is wider than the screen: no sideways scrolling of the page itself.
      const overflow = await page.evaluate(() => {
        const doc = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document;
        return doc.documentElement.scrollWidth - doc.documentElement.clientWidth;
      });
      assert.ok(overflow <= 0, `the page is ${overflow}px wider than a 390px screen`);
      // Who has approved a shared job: both tenants are waiting.
      assert.match(await rows.first().locator('td[data-label="Approved by"]').innerText(), /web: waiting[\s\S]*db: waiting/);
      await screenshot(page, 'narrow');
      await assertAccessible(page);
    },
  );

  // What a user at a desktop width reported: clipped buttons, a far NotBefore in hours that squashed the
  // timeline, and "waiting" on an event that arrived Started. Each at both desktop layouts' edges.
  for (const width of [1280, 1440]) {
    dashboardTest(`at ${width}px every event button shows its whole label`, { width, before: mixedEvents }, async ({ page }) => {
      await mixedEventsShown(page);
      assert.deepEqual(
        (await page.locator('table.events button').allInnerTexts()).map((t) => t.trim()).sort(),
        [...Array<string>(3).fill('Approve'), ...Array<string>(3).fill('Cancel'), ...Array<string>(2).fill('Complete now')].sort(),
      );
      const { tableOverflow, buttons: boxes } = await eventButtons(page);
      assert.ok(tableOverflow <= 0, `the events table is ${tableOverflow}px wider than its panel`);
      for (const b of boxes) assert.ok(b.whole, `"${b.label}" is clipped: ${JSON.stringify(b)}`);
      await screenshot(page, `events-${width}`);
    });

    dashboardTest(
      `at ${width}px a NotBefore in 2099 reads as a date, and near events keep their width on the timeline`,
      { width, before: mixedEvents },
      async ({ page }) => {
        await mixedEventsShown(page);
        // The events table: days and the date, never hundreds of thousands of hours.
        const far = page.locator('tr[data-event]', { has: page.locator('td[data-label="Resources"]', { hasText: 'web2' }) });
        const farText = await far.locator('td[data-label="NotBefore"]').innerText();
        assert.doesNotMatch(farText, /\d{3,}h/, `the far countdown reads ${JSON.stringify(farText)}`);
        assert.match(farText, /days/);
        assert.match(farText, /2099-01-01/);
        // The near countdowns still read in minutes.
        assert.match(await eventRow(page, 'Freeze').locator('.countdown').innerText(), /^1[45]m \d\ds$/);

        // The timeline: the far event does not set the scale; it runs off the right edge, marked with its date.
        await page
          .locator('.timeline .bar')
          .nth(MIXED_EVENT_COUNT - 1)
          .waitFor();
        const track = await page.locator('[data-timeline-vm="web1"] .tl-track').boundingBox();
        for (const vm of ['web1', 'db1', 'web0', 'db0']) {
          const bar = await page.locator(`[data-timeline-vm="${vm}"] .bar`).boundingBox();
          assert.ok(bar && bar.width >= 0.25 * track!.width, `${vm}'s bar is ${bar?.width}px of a ${track!.width}px track`);
        }
        const farBar = page.locator('[data-timeline-vm="web2"] .bar');
        assert.match((await farBar.getAttribute('aria-label')) ?? '', /2099-01-01/);
        const marker = page.locator('[data-timeline-vm="web2"] .off-scale');
        assert.equal(await marker.count(), 1, 'the far event has an off-scale marker');
        const markerText = await marker.innerText();
        assert.match(markerText, /2099-01-01/);
        assert.doesNotMatch(markerText, /\d+h/);
        const markerBox = await marker.boundingBox();
        assert.ok(markerBox!.x + markerBox!.width <= track!.x + track!.width + 0.5, 'the marker sits inside the track');
        // No more axis ticks than fit: the scale is the near events'.
        assert.ok((await page.locator('.timeline .tick').count()) <= 8);
        await page.locator('#timeline').scrollIntoViewIfNeeded();
        await screenshot(page, `timeline-far-${width}`);
        await assertAccessible(page);
      },
    );

    dashboardTest(
      `at ${width}px an event that arrived Started says approval was not needed, not "waiting"`,
      { width, before: mixedEvents },
      async ({ page }) => {
        await mixedEventsShown(page);
        // The hardware failure on h1: one event each for web and db, Started at once, by the failure.
        const failed = page.locator('tr[data-type="Reboot"][data-status="Started"]');
        assert.equal(await failed.count(), 2);
        for (const row of await failed.all()) {
          assert.match(await row.locator('td[data-label="Status"]').innerText(), /Started/);
          const cell = row.locator('td[data-label="Approved by"]');
          const text = await cell.innerText();
          assert.doesNotMatch(text, /waiting|nobody/, `Approved by reads ${JSON.stringify(text)}`);
          assert.match(text, /not needed/);
          assert.match((await cell.locator('[title]').first().getAttribute('title')) ?? '', /arrived already Started/);
          assert.equal(await row.getByRole('button', { name: 'Approve' }).count(), 0);
        }
        // A job still Scheduled keeps saying who it waits for.
        assert.match(await eventRow(page, 'Freeze').locator('td[data-label="Approved by"]').innerText(), /nobody/);
      },
    );

    dashboardTest(
      `at ${width}px a table too wide for its panel (long VM names) scrolls, and its buttons stay whole and work`,
      {
        width,
        emulator: { fleet: LONG_NAMES },
        before: async (controlUrl) => {
          for (const body of [
            { type: 'restart', vms: [LONG_NAMES[0]!.name] },
            { type: 'hardware-failure', vms: [LONG_NAMES[1]!.name] },
          ]) {
            const res = await fetch(`${controlUrl}/v1/operations`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(body),
            });
            assert.equal(res.status, 201, await res.text());
          }
        },
      },
      async ({ page }) => {
        await linkIs(page, 'live');
        await page.locator('tr[data-event]').nth(1).waitFor();
        const { tableOverflow, buttons } = await eventButtons(page);
        assert.ok(tableOverflow > 0, 'the names are long enough to need scrolling');
        assert.deepEqual(buttons.map((b) => b.label.trim()).sort(), ['Approve', 'Cancel', 'Complete now']);
        for (const b of buttons) assert.ok(b.whole, `"${b.label}" is clipped: ${JSON.stringify(b)}`);
        await screenshot(page, `events-long-names-${width}`);
        // The pinned Approve is the real one: it Starts the event.
        const row = page.locator('tr[data-status="Scheduled"]');
        const id = await row.getAttribute('data-event');
        await row.getByRole('button', { name: 'Approve' }).click();
        await page.locator(`tr[data-event="${id}"][data-status="Started"]`).waitFor();
      },
    );
  }

  // Real impact is on only with a token (SPEC §4), so the page asks for it first.
  const impactToken = 'impact-secret';
  dashboardTest(
    'shows what real impact did to a VM’s bound process',
    { emulator: { token: impactToken, impact: true } },
    async ({ controlUrl, page, errors }) => {
      await page.getByLabel('Bearer token').fill(impactToken);
      await page.getByRole('button', { name: 'Connect' }).click();
      await linkIs(page, 'live');
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${controlUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${impactToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
        return JSON.parse(text) as Record<string, unknown>;
      };
      const bound = await call('PUT', '/v1/vms/web0/process', { command: [process.execPath, '-e', 'setInterval(() => {}, 1000)'] });
      await call('POST', '/v1/operations', { type: 'freeze', vms: ['web0'] });
      // Just past NotBefore (a whole second after 15 minutes), inside the Freeze's 5 s impact.
      await call('POST', '/v1/clock/advance', { seconds: 15 * 60 + 2 });
      // First the start of the command it owns, then the Freeze's SIGSTOP to it.
      const badge = page.locator('[data-vm="web0"] .impact', { hasText: 'SIGSTOP' });
      await badge.waitFor();
      assert.equal(await badge.innerText(), `SIGSTOP pid ${String(bound.pid)}`);
      await call('POST', '/v1/clock/advance', { seconds: 60 });
      await page.locator('[data-vm="web0"] .impact', { hasText: 'SIGCONT' }).waitFor();
      await call('DELETE', '/v1/vms/web0/process');
      assert.deepEqual(errors, []);
    },
  );

  test('keeps working when the emulator restarts', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const dir = mkdtempSync(join(tmpdir(), 'forewarn-dashboard-'));
    const statePath = join(dir, 'state.json');
    let emulator = await Emulator.create({ fleet: FLEET, clock: 'manual', statePath });
    const { controlUrl } = await emulator.listen(LOOPBACK);
    const port = Number(new URL(controlUrl).port);
    const { context, page, errors } = await openPage(`${controlUrl}/`);
    try {
      await linkIs(page, 'live');
      await page.getByRole('checkbox', { name: 'db1' }).check();
      await page.getByRole('combobox', { name: 'Operation' }).selectOption('redeploy');
      await page.getByRole('button', { name: 'Trigger' }).click();
      await eventRow(page, 'Redeploy').waitFor();

      // The emulator stops: the page says so and keeps trying.
      await emulator.close();
      await linkIs(page, 'reconnecting');

      // It comes back on the same address with its saved state: the page reconnects by itself.
      emulator = await Emulator.create({ clock: 'manual', statePath });
      await emulator.listen({ imds: LOOPBACK.imds, control: { host: '127.0.0.1', port } });
      await linkIs(page, 'live');
      const row = eventRow(page, 'Redeploy');
      await row.and(page.locator('[data-status="Scheduled"]')).waitFor();

      // And it still drives the emulator: approve as db1, then complete it now.
      await row.getByRole('button', { name: 'Approve' }).click();
      await row.and(page.locator('[data-status="Started"]')).waitFor();
      await page.locator('[data-vm="db1"][data-state="redeploying"]').waitFor();
      await row.getByRole('button', { name: 'Complete now' }).click();
      await page.locator('[data-empty="events"]').waitFor();
      const history = (await (await fetch(`${controlUrl}/v1/history`)).json()) as { events: { type: string; outcome: string }[] };
      assert.deepEqual(
        history.events.map((e) => [e.type, e.outcome]),
        [['Redeploy', 'completed']],
      );
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const token = 'dashboard-secret';
  dashboardTest(
    'with a bearer token the page asks for it, refuses a wrong one, and works with the right one',
    { emulator: { token } },
    async ({ page, requests }) => {
      const input = page.getByLabel('Bearer token');
      await input.waitFor();
      assert.equal(await page.locator('[data-vm]').count(), 0, 'nothing is shown without the token');
      await input.fill('wrong');
      await page.getByRole('button', { name: 'Connect' }).click();
      await page.getByText('refused the token').waitFor();
      await page.getByLabel('Bearer token').fill(token);
      await page.getByRole('button', { name: 'Connect' }).click();
      await linkIs(page, 'live');
      await page.locator('[data-vm="web0"]').waitFor();
      // The token travels in a header, never in a URL.
      assert.ok(
        requests.every((u) => !u.includes(token)),
        'no request URL carries the token',
      );
      // A reload keeps it for the tab.
      await page.reload();
      await linkIs(page, 'live');
      await page.locator('[data-vm="web0"]').waitFor();
    },
  );
});
