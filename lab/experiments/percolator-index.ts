/**
 * percolator-index: the Percolator paper's incremental indexing pipeline in miniature (OSDI 2010 §2,
 * docs/percolator.md). Pages arrive one Percolator transaction each (url, content, PageRank, links);
 * `content` is an observed column, so each arrival notifies the observer, which runs in real worker
 * processes (`tessera observers run --app …`, two of them): it groups pages by a hash of their content
 * and keeps the highest-ranked one as the canonical page of that hash (`dups`), and inverts the page's
 * links into `anchors` (target, source → anchor text), counting its runs there. While pages arrive, a
 * worker is killed -9 twice (and restarted) and a tserver is paused for a few seconds. When the notify
 * backlog has drained, the paper's invariants are checked: exactly one canonical page per content
 * hash and it is the highest-ranked (ties: the smallest url); every link inverted exactly once (one
 * anchors row per link, run count 1: no change lost, no committed double run); no notify hint and no
 * lock left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Row } from '../../client/client-types';
import { decodeRowState, NOTIFY_COLUMN } from '../../client/percolator/row-state';
import { serverEntryPath } from '../package-root';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab, type ExperimentLab } from './experiment-lab';

const PAGES = 40;
const CONTENTS = 12;
const LINKS_PER_PAGE = 2;
const WORKERS = 2;
const PAUSE_MS = 3_000;
const DRAIN_TIMEOUT_MS = 180_000;

/** The observer app the workers load (CommonJS; written beside the report). Ranks are int64 (bigint). */
const APP = `
const crypto = require('node:crypto');
exports.observers = [{
  name: 'dedup-and-invert',
  table: 'pages',
  async run(txn, key, row) {
    if (!row) return;
    const hash = crypto.createHash('sha256').update(row.content).digest('hex').slice(0, 16);
    const cur = await txn.get('dups', { hash });
    if (!cur || row.rank > cur.rank || (row.rank === cur.rank && row.url < cur.url)) await txn.put('dups', { hash, url: row.url, rank: row.rank });
    for (const l of JSON.parse(row.links)) {
      const a = await txn.get('anchors', { target: l.to, source: row.url });
      await txn.put('anchors', { target: l.to, source: row.url, anchor: l.anchor, runs: ((a && a.runs) || 0n) + 1n });
    }
  },
}];
`;

interface Page {
  url: string;
  content: string;
  rank: bigint;
  links: Array<{ to: string; anchor: string }>;
}

function makePages(): Page[] {
  // Deterministic: ranks and links from a seeded hash, so a report names the same pages each run.
  const h = (s: string): number => crypto.createHash('sha256').update(s).digest().readUInt32BE(0);
  return Array.from({ length: PAGES }, (_, i) => ({
    url: `http://site${i % 7}.example/p${i}`,
    content: `content #${h(`c${i}`) % CONTENTS}`,
    rank: BigInt(h(`r${i}`) % 50),
    links: Array.from({ length: LINKS_PER_PAGE }, (_, k) => ({ to: `http://site${(i + k + 1) % 7}.example/p${(i * 3 + k) % PAGES}`, anchor: `anchor ${i}.${k}` })),
  }));
}

const hashOf = (content: string): string => crypto.createHash('sha256').update(content).digest('hex').slice(0, 16);

class Workers {
  private readonly procs: Array<ChildProcess | undefined> = [];
  kills = 0;
  constructor(private readonly args: string[]) {}
  start(i: number): void {
    const p = spawn(process.execPath, this.args, { stdio: 'ignore' });
    p.on('error', () => undefined);
    this.procs[i] = p;
  }
  kill9(i: number): void {
    this.procs[i]?.kill('SIGKILL');
    this.kills++;
  }
  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => (p && p.exitCode === null ? new Promise<void>((r) => { p.once('exit', () => r()); p.kill('SIGTERM'); setTimeout(() => { p.kill('SIGKILL'); }, 5_000).unref(); }) : Promise.resolve())));
  }
}

/** Raw rows of a Percolator table (hidden columns included). */
const rawRows = (lab: ExperimentLab, table: string): Promise<Row[]> => lab.client.table(table).scan({ timeoutMs: 30_000 });

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function percolatorIndex(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'percolator-index');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const appFile = path.join(o.baseDir, 'percolator-index-app.js');
  fs.writeFileSync(appFile, APP);
  const workers = new Workers([serverEntryPath(o.serverEntry), 'observers', 'run', '--app', appFile, '--lab_dir', path.join(o.baseDir, 'lab-percolator-index'), '--interval_ms', '100', '--timeout_ms', '10000']);
  try {
    const p = lab.client.percolator;
    await p.createTable({ name: 'pages', columns: [{ name: 'url', type: 'string' }, { name: 'content', type: 'string' }, { name: 'rank', type: 'int64' }, { name: 'links', type: 'string' }], primaryKey: { hash: ['url'] }, numTablets: 3, observedColumns: ['content'] });
    await p.createTable({ name: 'dups', columns: [{ name: 'hash', type: 'string' }, { name: 'url', type: 'string' }, { name: 'rank', type: 'int64' }], primaryKey: { hash: ['hash'] }, numTablets: 3 });
    await p.createTable({ name: 'anchors', columns: [{ name: 'target', type: 'string' }, { name: 'source', type: 'string' }, { name: 'anchor', type: 'string' }, { name: 'runs', type: 'int64' }], primaryKey: { hash: ['target'], range: ['source'] }, numTablets: 3 });
    for (let i = 0; i < WORKERS; i++) workers.start(i);
    lab.log(`${WORKERS} observer workers started (tessera observers run --app ${path.basename(appFile)}); ${PAGES} pages arrive, ${CONTENTS} distinct contents`);

    const pages = makePages();
    const t0 = lab.now();
    for (const [i, pg] of pages.entries()) {
      if (i === Math.floor(PAGES / 4) || i === Math.floor((3 * PAGES) / 4)) {
        const w = workers.kills % WORKERS;
        workers.kill9(w);
        lab.log(`worker ${w} killed -9 (page ${i} arriving); restarted`);
        workers.start(w);
      }
      if (i === Math.floor(PAGES / 2)) {
        await lab.driver.pause('n2', 'tserver');
        lab.log(`tserver n2 paused for ${PAUSE_MS} ms`);
        setTimeout(() => void lab.driver.resume('n2', 'tserver').then(() => lab.log('tserver n2 resumed')), PAUSE_MS).unref();
      }
      await waitUntil(
        async () => {
          try {
            const t = await p.begin({ timeoutMs: 10_000 });
            await t.put('pages', { url: pg.url, content: pg.content, rank: pg.rank, links: JSON.stringify(pg.links) });
            await t.commit();
            return true;
          } catch {
            return undefined;
          }
        },
        { timeoutMs: 60_000, what: `page ${pg.url} written` },
      );
    }
    await lab.driver.resume('n2', 'tserver').catch(() => undefined);
    figures['pagesWrittenMs'] = Math.round(lab.now() - t0);
    lab.log(`${PAGES} pages written in ${figures['pagesWrittenMs']} ms; waiting for the notify backlog to drain`);

    const drained = await waitUntil(
      async () => {
        const left = (await rawRows(lab, 'pages')).filter((r) => r[NOTIFY_COLUMN] !== null && r[NOTIFY_COLUMN] !== undefined).length;
        return left === 0 ? true : undefined;
      },
      { timeoutMs: DRAIN_TIMEOUT_MS, intervalMs: 500, what: 'every page\'s notify hint cleared' },
    ).catch((e: Error) => e);
    figures['drainedMs'] = Math.round(lab.now() - t0);
    await workers.stop();
    checks.push({ name: 'the notify backlog drains: every page\'s change was observed and its hint cleared', ok: drained === true, detail: drained === true ? `drained ${figures['drainedMs']} ms after the first page` : String(drained) });

    // Read every row through Percolator (resolving whatever killed workers left), then look at the raw rows.
    const reader = await p.begin({ timeoutMs: 30_000 });
    const dupsRaw = await rawRows(lab, 'dups');
    const anchorsRaw = await rawRows(lab, 'anchors');
    const dups = (await Promise.all(dupsRaw.map((r) => reader.get('dups', { hash: r['hash'] })))).filter((r): r is Row => r !== undefined);
    const anchors = (await Promise.all(anchorsRaw.map((r) => reader.get('anchors', { target: r['target'], source: r['source'] })))).filter((r): r is Row => r !== undefined);
    await reader.abort();

    const best = new Map<string, Page>();
    for (const pg of pages) {
      const h = hashOf(pg.content);
      const b = best.get(h);
      if (!b || pg.rank > b.rank || (pg.rank === b.rank && pg.url < b.url)) best.set(h, pg);
    }
    const wrongCanon = [...best.entries()].filter(([h, pg]) => !dups.some((d) => d['hash'] === h && d['url'] === pg.url && d['rank'] === pg.rank));
    checks.push({ name: 'exactly one canonical page per content hash, and it is the highest-ranked', ok: dups.length === best.size && wrongCanon.length === 0, detail: `${dups.length} dups rows for ${best.size} distinct contents; wrong or missing: ${wrongCanon.map(([h, pg]) => `${h} → expected ${pg.url} (rank ${pg.rank})`).join('; ') || 'none'}` });

    const links = pages.flatMap((pg) => pg.links.map((l) => ({ target: l.to, source: pg.url, anchor: l.anchor })));
    const missing = links.filter((l) => !anchors.some((a) => a['target'] === l.target && a['source'] === l.source && a['anchor'] === l.anchor));
    const twice = anchors.filter((a) => a['runs'] !== 1n);
    checks.push({ name: 'every link inverted exactly once (one anchors row per link, written by one committed run)', ok: anchors.length === links.length && missing.length === 0 && twice.length === 0, detail: `${anchors.length} anchors rows for ${links.length} links; missing ${missing.length}; runs ≠ 1: ${twice.map((a) => `${String(a['source'])}→${String(a['target'])} runs ${String(a['runs'])}`).join('; ') || 'none'}` });

    const locks = [...(await rawRows(lab, 'pages')), ...(await rawRows(lab, 'dups')), ...(await rawRows(lab, 'anchors'))].filter((r) => decodeRowState(r).lock !== undefined).length;
    checks.push({ name: 'no lock left behind by the killed workers once every row was read', ok: locks === 0, detail: `${locks} lock(s) in the raw rows; resolved by the final reads: rolled back ${p.stats.rolledBack}, rolled forward ${p.stats.rolledForward}` });
    figures['workerKills'] = workers.kills;
    figures['canonicalPages'] = dups.length;
    figures['anchorRows'] = anchors.length;
    return {
      name: 'percolator-index',
      title: 'Percolator\'s incremental indexing pipeline, with observer workers killed and a tserver paused',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3). ${PAGES} pages (${CONTENTS} distinct contents, ${LINKS_PER_PAGE} links each) arrive one Percolator transaction each; ${WORKERS} observer worker processes dedupe them by content hash (highest PageRank wins) and invert their links; a worker is killed -9 twice and tserver n2 is paused for ${PAUSE_MS / 1000} s meanwhile.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await workers.stop();
    await lab.close();
  }
}
