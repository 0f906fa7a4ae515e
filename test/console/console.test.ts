import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { localPath } from '../../src/core/uri.ts';
import { checkpointPath } from '../../src/format/delta/actions.ts';
import { startServer, type TestServer } from '../server/server-fixture.ts';
import { chromiumMissing, launchChromium, screenshotDir } from './browser.ts';

const missing = chromiumMissing();
// Without Chromium these tests skip, except in CI, where a missing browser is a failure.
const skip = missing !== undefined && !process.env.CI;
if (skip) console.warn(`test/console/console.test.ts: console tests in Chromium skipped: ${missing}`);

const NAME = 'sales.events';
const REGIONS = ['us', 'eu', 'apac', 'latam'];

/** Rows of one commit: `n` rows spread over `regions`, notes of varied length so file sizes differ. */
function batch(start: number, n: number, regions: string[]): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({ id: start + i, region: regions[i % regions.length], amount: (start + i) * 1.5, note: 'x'.repeat((start + i) % 97) }));
}

let s: TestServer;
let browser: Browser;
let page: Page;
let shots: string;
let tableId: string;
const written: Record<string, unknown>[] = [];

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

describe.skipIf(skip)('the web console in headless Chromium', () => {
  beforeAll(async () => {
    s = await startServer();
    const table = s.lake.table(NAME);
    // A partitioned table with several commits, written through the library.
    const commits = [batch(0, 40, ['us', 'eu']), batch(40, 160, ['us', 'apac']), batch(200, 12, ['latam']), batch(212, 70, ['eu', 'us', 'latam'])];
    for (const [i, rows] of commits.entries()) {
      await table.write(rows, i === 0 ? { partition: 'region' } : { mode: 'append' });
      written.push(...rows);
    }
    tableId = (await table.describe()).tableUuid;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    shots = screenshotDir();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  test('the page and its files are served without a token, from this origin only', async () => {
    const res = await fetch(`${s.url}/`);
    const html = await res.text();
    // 404 "console: not built" when dist/web/ is missing: npm run build makes it.
    expect(res.status, html).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(html).not.toMatch(/https?:\/\//);
    const script = await fetch(`${s.url}/console/main.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    // Only the built files are public: any other path still needs a token.
    expect((await fetch(`${s.url}/console/nope.js`)).status).toBe(401);
  });

  test('a wrong token is refused with the 401 message; the right one signs in', async () => {
    const requests: { url: string; auth: string | undefined }[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/')) requests.push({ url: r.url(), auth: r.headers().authorization });
    });
    await page.goto(`${s.url}/`);
    await page.waitForSelector('form#sign-in');
    await page.fill('#token', 'tlk_not-a-real-token');
    await page.click('form#sign-in button[type=submit]');
    const error = page.locator('#sign-in-error');
    await error.waitFor({ state: 'visible' });
    expect(await error.textContent()).toBe('401: auth: the bearer token is unknown, revoked or expired');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await shot('01-sign-in-refused');

    await page.fill('#token', s.tokens.admin);
    await page.click('form#sign-in button[type=submit]');
    await page.waitForSelector('table#tables');
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([s.tokens.admin]);
    // Every API call carried the token typed in: the wrong one first, then the right one.
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(requests[0]!.auth).toBe('Bearer tlk_not-a-real-token');
    expect(requests.slice(1).every((r) => r.auth === `Bearer ${s.tokens.admin}`)).toBe(true);
  });

  test('the tables list shows the table with its row count, formats and Delta in step', async () => {
    const row = page.locator(`tr[data-table-id="${tableId}"]`);
    expect(await row.locator('a.table-link').textContent()).toBe(NAME);
    expect(await row.locator('td.rows').textContent()).toBe(written.length.toLocaleString('en-US'));
    expect(await row.locator('.badge.iceberg').count()).toBe(1);
    expect(await row.locator('.badge.delta').count()).toBe(1);
    expect(await row.locator('td.in-step').textContent()).toContain('in step');
    await shot('02-tables');
  });

  test('the table page: schema, a timeline mark per snapshot with its Delta version, histogram and partition bars', async () => {
    const table = s.lake.table(NAME);
    await page.click(`tr[data-table-id="${tableId}"] a.table-link`);
    await page.waitForSelector('#timeline svg');
    expect(await page.locator('#table-title').textContent()).toBe(NAME);

    // Schema: every field ID, and the partition field.
    const fields = (await table.describe()).schema.fields;
    expect(await page.locator('#schema td.field-id').allTextContents()).toEqual(fields.map((f) => String(f.id)));
    expect(await page.locator('#partition-spec code').allTextContents()).toEqual(['region']);

    // Timeline: one mark per snapshot, oldest first, each with the Delta version mirroring it.
    const history = [...(await table.history())].reverse();
    expect(history.length).toBe(4);
    const marks = page.locator('#timeline g.snapshot');
    expect(await marks.count()).toBe(history.length);
    expect(await page.locator('#timeline circle.snap-mark').count()).toBe(history.length);
    for (const [i, h] of history.entries()) {
      const mark = marks.nth(i);
      expect(h.deltaVersion).toBeTypeOf('number');
      expect(await mark.getAttribute('data-snapshot-id')).toBe(String(h.snapshotId));
      expect(await mark.getAttribute('data-delta-version')).toBe(String(h.deltaVersion));
      expect(await mark.locator('text.delta-label').textContent()).toBe(`v${h.deltaVersion}`);
    }

    // Histogram: Sturges' bins over the live files' sizes; every file in exactly one bar.
    const sizes = (await table.files()).files.map((f) => f.bytes);
    const min = Math.min(...sizes);
    const max = Math.max(...sizes);
    const binCount = min === max ? 1 : Math.ceil(Math.log2(sizes.length)) + 1;
    const bars = page.locator('#histogram rect.hist-bar');
    expect(await bars.count()).toBe(binCount);
    const drawn = await bars.evaluateAll((els) => els.map((e) => ({ count: Number(e.getAttribute('data-count')), from: Number(e.getAttribute('data-from')), to: Number(e.getAttribute('data-to')) })));
    expect(drawn.reduce((a, b) => a + b.count, 0)).toBe(sizes.length);
    drawn.forEach((b, i) => {
      const last = i === drawn.length - 1;
      expect(b.count, `bin ${i}`).toBe(sizes.filter((x) => x >= b.from && (last ? x <= b.to : x < b.to)).length);
    });

    // Partitions: one bar per region the rows have, with that region's bytes adding up to the table's.
    const regions = [...new Set(written.map((r) => r.region as string))];
    expect(regions.sort()).toEqual([...REGIONS].sort());
    const parts = await page.locator('#partitions rect.part-bar').evaluateAll((els) => els.map((e) => ({ label: e.getAttribute('data-partition'), bytes: Number(e.getAttribute('data-bytes')), files: Number(e.getAttribute('data-files')) })));
    expect(parts.map((p) => p.label).sort()).toEqual(regions.map((r) => `region=${r}`).sort());
    expect(parts.reduce((a, p) => a + p.bytes, 0)).toBe(sizes.reduce((a, b) => a + b, 0));
    expect(parts.reduce((a, p) => a + p.files, 0)).toBe(sizes.length);

    // Commit history: a row per commit.
    expect(await page.locator('#commits tbody tr').count()).toBe(history.length);
    await shot('03-table');
  });

  test('delta_checkpoint and compaction run and show their results', async () => {
    const d = await s.lake.table(NAME).describe();
    const version = d.deltaVersion!;
    const file = join(localPath(d.location), checkpointPath(version));
    expect(existsSync(file)).toBe(false);
    await page.click('button[data-operation="delta_checkpoint"]');
    const result = page.locator('#maintenance-result.ok');
    await result.waitFor();
    expect(await result.textContent()).toContain(`delta_checkpoint: completed — checkpoint ${checkpointPath(version)} of Delta version ${version}`);
    expect(existsSync(file)).toBe(true);
    await page.locator('#maintenance').scrollIntoViewIfNeeded();
    await shot('04-checkpoint');

    const before = (await s.lake.table(NAME).files()).files.length;
    await page.click('button[data-operation="compaction"]');
    const compacted = page.locator('#maintenance-result.ok', { hasText: 'compaction' });
    await compacted.waitFor();
    const after = (await s.lake.table(NAME).files()).files.length;
    expect(after).toBeLessThan(before);
    expect(await compacted.textContent()).toContain(`compaction: completed — ${before} → ${after} data files`);
    await shot('05-compaction');
  });

  test('signed out and in again with a read token: the table shows, maintenance answers 403 on the page', async () => {
    await page.click('#sign-out');
    await page.waitForSelector('form#sign-in');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.fill('#token', s.tokens.read);
    await page.click('form#sign-in button[type=submit]');
    await page.click(`tr[data-table-id="${tableId}"] a.table-link`);
    await page.waitForSelector('#timeline svg');
    await page.click('button[data-operation="delta_checkpoint"]');
    const refused = page.locator('#maintenance-result.error');
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(/^delta_checkpoint: 403 /);
  });
});
