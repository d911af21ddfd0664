/**
 * The consoles in a real browser (headless Chromium from the system, driven by puppeteer-core): on a
 * running cluster of 1 master and 3 tservers, every page of the master's and a tserver's nav bar (and
 * a table's and a tablet's page) loads without a script error and fits a 1,400-pixel window (no
 * horizontal scroll); the master's /apply-timeline refreshes itself while a transaction's intents are
 * written and applied — its figures change without a reload.
 *
 * Without a browser the tests skip and say why, unless TESSERA_REQUIRE_BROWSER=1 (CI installs
 * Chromium and sets it), where a missing browser fails. Addresses 127.0.0.8-11.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'puppeteer-core';
import { TesseraClient } from '../../client/tessera-client';
import { findBrowserPath, horizontalOverflowPx, openBrowser, type LabBrowser } from '../../lab/browser-camera';
import { postFlag } from '../../lab/console-http';
import { ProcCluster, waitFor } from './cluster-harness';

const required = process.env['TESSERA_REQUIRE_BROWSER'] === '1';
const browserPath = findBrowserPath();
if (!browserPath && !required) {
  console.warn('console-browser tests SKIPPED: no Chromium found (apt-get install -y chromium, or TESSERA_CHROMIUM=path); TESSERA_REQUIRE_BROWSER=1 makes this a failure');
}

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;
let browser: LabBrowser | undefined;

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

/** The hrefs of a console's nav bar (every page it offers), as the browser sees them. */
async function navLinks(page: Page, base: string): Promise<string[]> {
  await page.goto(`${base}/`, { waitUntil: 'load' });
  const hrefs = (await page.evaluate("[...document.querySelectorAll('nav a')].map((a) => a.getAttribute('href'))")) as string[];
  return [...new Set(hrefs.filter((h) => h.startsWith('/')))];
}

/** Loads each page; returns the problems found (HTTP status, script errors, overflow), none when all is well. */
async function checkPages(base: string, paths: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const p of paths) {
    const { page, errors } = await browser!.newPage();
    try {
      const res = await page.goto(`${base}${p}`, { waitUntil: 'load' });
      if (!res || res.status() !== 200) problems.push(`${p}: HTTP ${res?.status() ?? 'no answer'}`);
      const over = await horizontalOverflowPx(page);
      if (over > 0) problems.push(`${p}: ${over} px wider than the 1,400-pixel window`);
      for (const e of errors) problems.push(`${p}: script error ${e}`);
    } finally {
      await page.close();
    }
  }
  return problems;
}

describe.skipIf(!browserPath && !required)(`consoles in a real browser${browserPath || required ? '' : ' (skipped: no Chromium found)'}`, () => {
  beforeAll(async () => {
    const b = await openBrowser();
    if ('reason' in b) throw new Error(`TESSERA_REQUIRE_BROWSER=1 but ${b.reason}`);
    browser = b;
    cluster = await ProcCluster.create({ hostBase: 8, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
    await cluster.startAll();
    client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
    await client.createTable({ name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
    await client.table('demo').upsertMany(Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i), value: `v${i}` })), { timeoutMs: 30_000 });
  }, 120_000);

  it('browser: every page of the master and tserver consoles loads without script errors and fits 1,400 px', async () => {
    const masterWeb = `http://${cluster!.masters[0]!.webAddress}`;
    const tserverWeb = `http://${cluster!.tservers[0]!.webAddress}`;
    const { page } = await browser!.newPage();
    const masterPages = await navLinks(page, masterWeb);
    const tserverPages = await navLinks(page, tserverWeb);
    await page.close();
    expect(masterPages).toEqual(expect.arrayContaining(['/tablet-servers', '/tables', '/apply-timeline']));
    expect(tserverPages).toEqual(expect.arrayContaining(['/tablets', '/mem-trackers', '/txn-applies']));
    const tablets = (await (await fetch(`${tserverWeb}/api/v1/tablets`)).json()) as { tablets: Array<{ tabletId: string; table: string }> };
    const demoTablet = tablets.tablets.find((t) => t.table === 'demo')!.tabletId;
    const problems = [
      ...(await checkPages(masterWeb, ['/', ...masterPages, '/table?name=demo', '/apply-timeline?table=demo'])),
      ...(await checkPages(tserverWeb, ['/', ...tserverPages, `/tablet?id=${demoTablet}`])),
    ];
    expect(problems).toEqual([]);
  }, 180_000);

  it('browser: the apply timeline refreshes itself while a transaction is written, committed and applied (one tserver applying late)', async () => {
    const masterWeb = `http://${cluster!.masters[0]!.webAddress}`;
    await postFlag(`http://${cluster!.tservers[0]!.webAddress}`, 'TEST_inject_sleep_before_applying_intents_ms', '3000', true);
    const { page, errors } = await browser!.newPage();
    await page.goto(`${masterWeb}/apply-timeline?table=demo`, { waitUntil: 'load' });
    // The intents column of each replica's row in the page's tables, as shown now.
    const intentsShown = async (): Promise<number[]> =>
      (await page.evaluate("[...document.querySelectorAll('#timeline section.tablet table tbody tr')].map((tr) => Number(tr.children[2].textContent || '0'))")) as number[];
    const refreshes = async (): Promise<number> => Number(await page.evaluate("document.getElementById('timeline').getAttribute('data-refreshes')"));
    expect(await intentsShown()).toEqual(new Array(9).fill(0));

    const txn = await client!.beginTransaction({ isolation: 'snapshot', timeoutMs: 60_000 });
    await txn.table('demo').upsertMany(Array.from({ length: 30 }, (_, i) => ({ id: BigInt(1000 + i), value: 'x'.repeat(4096) })), { timeoutMs: 30_000 });
    const open = await waitFor('the page to show the open transaction\'s intents on all 9 replicas', 30_000, async () => {
      const shown = await intentsShown();
      return shown.length === 9 && shown.every((n) => n > 0) ? shown : undefined;
    }, 250);
    expect(open.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const before = await refreshes();
    await txn.commit({ timeoutMs: 30_000 });
    await waitFor('the page to show every replica applied (no intents left)', 30_000, async () => (await intentsShown()).every((n) => n === 0), 250);
    expect(await refreshes()).toBeGreaterThan(before);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
