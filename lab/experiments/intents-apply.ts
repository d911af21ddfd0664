/**
 * intents-apply — the defining experiment (the YugabyteDB blog "when provisional records are applied
 * to RegularDB from IntentsDB", step for step; docs/walkthrough.md does it by hand):
 *  1. 3 nodes; n0 gets TEST_inject_sleep_before_applying_intents_ms = delay.
 *  2. table `demo (id int64 hash, value string)` in 3 tablets, RF 3.
 *  3. one transaction inserts `rows` rows of `rowBytes` random printable characters (the blog's
 *     dbms_random.string('P', 1024*1024), which does not compress) and stays open: every replica of
 *     every tablet holds the provisional records in its IntentsDB memtable — the same bytes on the
 *     three nodes (within 5 %), the same records (digests).
 *  4. commit: n1's and n2's RegularDB memtables grow by about as much at once; n0's stays as it
 *     was until its delay ends — yet reads at the leaders already return every committed row.
 *  5. after the delay n0 applies too: same growth, same RegularDB contents on every replica.
 * The figures are read from the tservers' JSON consoles (/api/v1/tablets) as a person reads /tablets;
 * the report charts each node's IntentsDB and RegularDB memtable bytes over time, and, when a browser
 * is installed, holds screenshots of the master's /apply-timeline at the three moments.
 */
import { createHash } from 'node:crypto';
import { DbError, ErrorCode } from '../../common/errors';
import * as path from 'node:path';
import { humanBytes } from '../../rpc';
import { openBrowser, type LabBrowser } from '../browser-camera';
import type { NodeAddresses } from '../cluster-driver';
import { getJson } from '../console-http';
import { tserverTablets } from '../tablet-view';
import { sleep, waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab, type ExperimentLab } from './experiment-lab';
import { intentsSpreads, largestRegularChange, nodeIntentsMem, nodeRegularMem, nodeSeries, phaseTable, randomRowValue, regularGrowth, tabletIds, type Sample, type Snapshot } from './intents-apply-figures';
import { sameIntentDigests } from './intents-digests';

export interface IntentsApplyParams {
  rows: number;
  rowBytes: number;
  delayMs: number;
  /** 1: the transaction is the blog's SQL, sent by a PostgreSQL client to n1's port 5433 (`--via sql`). */
  viaSql?: number;
}

/** The blog's figures: 100 rows of 1 MiB, a 60 s delay on the first node. */
export const INTENTS_APPLY_DEFAULTS: IntentsApplyParams = { rows: 100, rowBytes: 1024 * 1024, delayMs: 60_000 };

const TABLE = 'demo';
const NODES = ['n0', 'n1', 'n2'] as const;
const DELAY_FLAG = 'TEST_inject_sleep_before_applying_intents_ms';
/** Rows per write RPC: keeps each Raft entry (and RPC frame) to a few MiB whatever the row size. */
const ROW_BYTES_PER_RPC = 4 * 1024 * 1024;
const SAMPLE_INTERVAL_MS = 250;
const SAMPLES_MAX = 20_000;
/** The blog's "the same on the 3 servers": the replicas' IntentsDB memtables differ by at most this. */
const SAME_SPREAD_MAX = 0.05;
/** "Grown by about the same": RegularDB growth over the IntentsDB memtable it came from. */
const GROWTH_RATIO_RANGE = [0.8, 1.25] as const;
/** n0's RegularDB memtable "unchanged": by less than this many bytes (small writes, not the rows). */
const UNCHANGED_BYTES_MAX = 256 * 1024;
/** Samples of n0 taken this close to the delay's end are left out of "unchanged" (clocks, sampling). */
const DELAY_END_MARGIN_MS = 1_000;

async function snapshot(nodes: readonly NodeAddresses[]): Promise<Snapshot> {
  const s: Snapshot = new Map();
  await Promise.all(
    nodes.map(async (n) => {
      // A node that did not answer (busy applying 100 MiB, say) is left out, not taken for empty.
      const rows = await tserverTablets(n.tserver.webUrl);
      if (rows) s.set(n.name, new Map(rows.filter((r) => r.table === TABLE).map((r) => [r.tabletId, r])));
    }),
  );
  return s;
}

/** Samples every node's replicas of the table every SAMPLE_INTERVAL_MS until stopped. */
function startSampler(lab: ExperimentLab, nodes: readonly NodeAddresses[], samples: Sample[]): () => void {
  let busy = false;
  const t = setInterval(() => {
    if (busy || samples.length >= SAMPLES_MAX) return;
    busy = true;
    void snapshot(nodes)
      .then((snap) => samples.push({ atMs: lab.now(), snap }))
      .finally(() => (busy = false));
  }, SAMPLE_INTERVAL_MS);
  return () => clearInterval(t);
}

/** Screenshots of the master's apply timeline at the blog's moments, when a browser is installed. */
interface Camera {
  take(moment: string, caption: string): Promise<void>;
  shots: Array<{ file: string; caption: string }>;
  close(): Promise<void>;
}

async function openCamera(lab: ExperimentLab, o: ExperimentOptions, timelineUrl: string): Promise<Camera | undefined> {
  const b = await openBrowser().catch((e: unknown) => ({ reason: `the browser did not start: ${String(e)}` }));
  if ('reason' in b) {
    lab.log(`no screenshots: ${b.reason}`);
    return undefined;
  }
  const browser: LabBrowser = b;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const shots: Camera['shots'] = [];
  return {
    shots,
    async take(moment, caption) {
      const file = `intents-apply-${stamp}-${moment}.png`;
      try {
        await browser.screenshot(timelineUrl, path.join(o.baseDir, 'experiments', file));
        shots.push({ file, caption });
        lab.log(`screenshot ${file}: ${caption}`);
      } catch (e) {
        lab.log(`screenshot ${moment} failed: ${String(e)}`);
      }
    },
    close: () => browser.close(),
  };
}

/** The open transaction, whichever way it was written. */
interface OpenTxn {
  commit(o: { timeoutMs: number }): Promise<unknown>;
  /** Its id (the client's); undefined through SQL, whose applies are found by the table's tablets. */
  txnId?: string;
}

/** How each row's value is fingerprinted (sha256 through the client; md5, which SQL computes, through SQL). */
export type Digest = 'sha256' | 'md5';

const digestOf = (kind: Digest, value: string): string => createHash(kind).update(value).digest('hex');

/** n1's SQL endpoint: the process lab's tservers serve SQL on their RPC host, port 5433 (docs/sql.md). */
function sqlAddressOf(lab: ExperimentLab): { host: string; port: number } {
  if (lab.driver.kind !== 'process') throw new DbError(ErrorCode.INVALID_ARGUMENT, 'intents-apply --via sql runs on the process driver (the docker lab does not publish port 5433)');
  const rpc = lab.driver.addresses().find((n) => n.name === 'n1')!.tserver.hostRpcAddress;
  return { host: rpc.slice(0, rpc.lastIndexOf(':')), port: 5433 };
}

/**
 * The blog's statements through port 5433, verbatim but for the sizes and the 3 tablets:
 * `create extension orafce; create table demo (id bigserial primary key, value text); begin
 * transaction; insert into demo(value) select dbms_random.string('P',1024*1024) from
 * generate_series(1,100);` — left open. The values' md5 are read inside the transaction.
 */
async function insertOpenSql(lab: ExperimentLab, p: IntentsApplyParams, digests: Map<bigint, string>): Promise<{ txn: OpenTxn; batch: number }> {
  const { Client } = await import('pg');
  const pg = new Client({ ...sqlAddressOf(lab), user: 'yugabyte', database: 'yugabyte', statement_timeout: 0 });
  await pg.connect();
  pg.on('error', () => undefined);
  const say = async (sql: string): Promise<void> => {
    lab.log(`psql> ${sql}`);
    await pg.query(sql);
  };
  try {
    await say('begin transaction;');
    const size = p.rowBytes === 1024 * 1024 ? '1024*1024' : String(p.rowBytes);
    await say(`insert into demo(value) select dbms_random.string('P',${size}) from generate_series(1,${p.rows});`);
    for (const r of (await pg.query('select id, md5(value) as h from demo')).rows as Array<{ id: string; h: string }>) digests.set(BigInt(r.id), r.h);
  } catch (e) {
    await pg.end().catch(() => undefined);
    throw e;
  }
  const txn: OpenTxn = {
    commit: async () => {
      try {
        await say('commit;');
      } finally {
        await pg.end().catch(() => undefined);
      }
    },
  };
  return { txn, batch: Math.max(1, Math.floor(ROW_BYTES_PER_RPC / Math.max(1, p.rowBytes))) };
}

async function insertOpen(lab: ExperimentLab, o: ExperimentOptions, p: IntentsApplyParams, digests: Map<bigint, string>): Promise<{ txn: OpenTxn; batch: number }> {
  if (p.viaSql) return insertOpenSql(lab, p, digests);
  const txn = await lab.client.beginTransaction({ isolation: 'snapshot', timeoutMs: 120_000 + p.delayMs });
  const batch = Math.max(1, Math.floor(ROW_BYTES_PER_RPC / Math.max(1, p.rowBytes)));
  for (let i = 0; i < p.rows; i += batch * 3) {
    const chunk = Array.from({ length: Math.min(batch * 3, p.rows - i) }, (_, j) => {
      const value = randomRowValue(i + j, p.rowBytes);
      digests.set(BigInt(i + j), digestOf('sha256', value));
      return { id: BigInt(i + j), value };
    });
    await txn.table(TABLE).upsertMany(chunk, { timeoutMs: 120_000, rowsPerRpc: batch });
    o.progress(`  inserted ${Math.min(p.rows, i + batch * 3)}/${p.rows} rows`);
  }
  return { txn, batch };
}

/** The largest RSS the master saw for a tserver (heartbeats), in bytes; 0 when unknown. */
async function tserverRssMax(masterWebUrl: string | undefined): Promise<number> {
  if (!masterWebUrl) return 0;
  const body = (await getJson(`${masterWebUrl}/api/v1/tablet-servers`).catch(() => undefined)) as { tabletServers?: Array<{ rssBytes: number }> } | undefined;
  return Math.max(0, ...(body?.tabletServers ?? []).map((t) => t.rssBytes));
}

/** What the phases of one run share. */
interface Run {
  lab: ExperimentLab;
  o: ExperimentOptions;
  p: IntentsApplyParams;
  nodes: readonly NodeAddresses[];
  /** Bytes of row values the transaction writes. */
  written: number;
  figures: Record<string, number | string>;
  check(name: string, ok: boolean, detail: string): void;
  samples: Sample[];
  camera?: Camera;
}

interface Opened {
  txn: OpenTxn;
  /** Rows per write RPC and per scan page. */
  batch: number;
  /** Every replica's figures once they all hold the transaction's intents. */
  openSnap: Snapshot;
  /** sha256 of each row's value, by id, to check what is read back. */
  digests: Map<bigint, string>;
}

const growthOk = (g: ReadonlyArray<{ ratio: number }>): boolean => g.length === 3 && g.every((x) => x.ratio >= GROWTH_RATIO_RANGE[0] && x.ratio <= GROWTH_RATIO_RANGE[1]);

async function setUpTable(run: Run): Promise<void> {
  const { lab, nodes, p } = run;
  if (p.viaSql) await createTableSql(lab);
  else await lab.client.createTable({ name: TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
  await waitUntil(async () => {
    const s = await snapshot(nodes);
    return s.size === 3 && [...s.values()].every((m) => m.size === 3 && [...m.values()].some((r) => r.role.toUpperCase() === 'LEADER' || r.role.toUpperCase() === 'FOLLOWER'));
  }, { timeoutMs: 60_000, intervalMs: 200, what: `every node hosting 3 replicas of ${TABLE}` });
  await lab.driver.setFlag('n0', DELAY_FLAG, String(p.delayMs), true);
  lab.log(`table ${TABLE} in 3 tablets; ${DELAY_FLAG}=${p.delayMs} on n0; memtables of 128 MiB (memstore_size_mb default)`);
}

async function createTableSql(lab: ExperimentLab): Promise<void> {
  const { Client } = await import('pg');
  const addr = sqlAddressOf(lab);
  const pg = new Client({ ...addr, user: 'yugabyte', database: 'yugabyte' });
  // The endpoint answers once its client reached the masters.
  await waitUntil(async () => {
    try {
      await pg.connect();
      return true;
    } catch {
      return undefined;
    }
  }, { timeoutMs: 60_000, intervalMs: 500, what: `the SQL endpoint ${addr.host}:${addr.port}` });
  try {
    for (const sql of ['create extension orafce;', `create table ${TABLE} (id bigserial primary key, value text) split into 3 tablets;`]) {
      lab.log(`psql> ${sql}`);
      await pg.query(sql);
    }
  } finally {
    await pg.end().catch(() => undefined);
  }
}

/** The transaction written and left open: the same intents, and the same IntentsDB memtable bytes, on every replica. */
async function openPhase(run: Run): Promise<Opened> {
  const { lab, nodes, p, figures, check, written } = run;
  const digests = new Map<bigint, string>();
  const insertAt = lab.now();
  const { txn, batch } = await insertOpen(lab, run.o, p, digests);
  figures['insertMs'] = Math.round(lab.now() - insertAt);
  lab.log(`transaction open: ${p.rows} rows of ${p.rowBytes} random printable bytes written as intents in ${figures['insertMs']} ms`);
  const open = await waitUntil(async () => {
    const s = await snapshot(nodes);
    for (const id of tabletIds(s)) {
      const counts = NODES.map((n) => s.get(n)?.get(id)?.intentsdb.intentCount ?? -1);
      if (!(counts[0]! > 0) || counts.some((n) => n !== counts[0])) return undefined;
    }
    return s;
  }, { timeoutMs: 30_000, intervalMs: 200, what: 'equal intent counts on every replica' }).catch(() => undefined);
  const openSnap = open ?? (await snapshot(nodes));
  lab.timeline.push(...phaseTable('open transaction', openSnap));
  const openDigests = open ? await sameIntentDigests(nodes, tabletIds(openSnap)) : undefined;
  check(
    'while open, every replica of every tablet holds the same provisional records',
    open !== undefined && openDigests?.same === true,
    !open ? 'intent counts differ or are zero' : `${tabletIds(openSnap).length} tablets, equal intent counts on all 3 replicas; ${openDigests!.detail}`,
  );
  const inMem = NODES.map((n) => nodeIntentsMem(openSnap, n));
  for (const [i, n] of NODES.entries()) figures[`${n}IntentsMemtableOpenBytes`] = inMem[i]!;
  check(
    'while open, the whole transaction is in the IntentsDB memtables of every node (none flushed yet)',
    inMem.every((b) => b >= written && b <= 1.5 * written),
    `${NODES.map((n, i) => `${n} ${humanBytes(inMem[i]!)}`).join(', ')} of IntentsDB memtable for ${humanBytes(written)} written`,
  );
  const spreads = intentsSpreads(openSnap, NODES);
  check(
    `while open, each tablet's IntentsDB memtable is the same size on the 3 nodes (within ${SAME_SPREAD_MAX * 100} %)`,
    spreads.length === 3 && spreads.every((x) => x.spread <= SAME_SPREAD_MAX && x.bytes[0]! > 0),
    spreads.map((x) => `${x.id.slice(0, 8)}: ${x.bytes.map(humanBytes).join(' / ')} (${(x.spread * 100).toFixed(2)} %)`).join('; '),
  );
  const invisible = await lab.client.table(TABLE).scan({ timeoutMs: 60_000, pageSize: batch, columns: ['id'] });
  check('while open, nothing is visible outside the transaction', invisible.length === 0, `${invisible.length} rows visible`);
  await run.camera?.take('1-open', `open transaction: ${humanBytes(inMem[0]!)} of IntentsDB memtable on every node, RegularDB empty`);
  return { txn, batch, openSnap, digests };
}

/** Commit: n1 and n2 apply at once, n0 waits; the leaders already read every row. Returns when it committed (lab ms, wall µs). */
async function commitPhase(run: Run, op: Opened): Promise<{ committedAt: number; commitWallMicros: number }> {
  const { lab, nodes, p, figures, check } = run;
  const commitStart = lab.now();
  const commitWallMicros = Date.now() * 1000;
  await op.txn.commit({ timeoutMs: 120_000 });
  const committedAt = lab.now();
  figures['commitMs'] = Math.round(committedAt - commitStart);
  lab.log(`committed in ${figures['commitMs']} ms`);
  const othersApplied = await waitUntil(async () => {
    const s = await snapshot(nodes);
    return ['n1', 'n2'].every((n) => s.get(n)?.size === 3 && [...s.get(n)!.values()].every((r) => r.intentsdb.intentCount === 0)) ? s : undefined;
  }, { timeoutMs: Math.max(1_000, Math.min(30_000, p.delayMs - 1_000)), intervalMs: 100, what: 'n1 and n2 to apply' }).catch(() => undefined);
  const during = othersApplied ?? (await snapshot(nodes));
  lab.timeline.push(...phaseTable('just after commit', during));
  check('after commit, n1 and n2 applied at once (no intents left)', othersApplied !== undefined, othersApplied ? `${Math.round(lab.now() - committedAt)} ms after commit` : 'still holding intents');
  for (const n of ['n1', 'n2']) {
    const g = regularGrowth(op.openSnap, during, op.openSnap, n);
    figures[`${n}RegularMemtableGrowthBytes`] = g.reduce((a, x) => a + x.grewBytes, 0);
    check(
      `right after the commit, ${n}'s RegularDB memtable of each tablet grew by about its IntentsDB memtable`,
      growthOk(g),
      g.map((x) => `${x.id.slice(0, 8)}: +${humanBytes(x.grewBytes)} for ${humanBytes(x.intentsBytes)} of intents (×${x.ratio.toFixed(2)})`).join('; '),
    );
  }
  const n0Intents = tabletIds(during).every((id) => (during.get('n0')?.get(id)?.intentsdb.intentCount ?? 0) === (op.openSnap.get('n0')?.get(id)?.intentsdb.intentCount ?? -1));
  check("after commit, n0 still holds the transaction's intents (its apply is delayed)", n0Intents && lab.now() - committedAt < p.delayMs, n0Intents ? 'n0 intent counts unchanged since the open phase' : 'n0 intent counts changed');
  await run.camera?.take('2-committed', `committed: RegularDB memtables of n1 and n2 grew by ${humanBytes(Number(figures['n1RegularMemtableGrowthBytes']))}, n0's unchanged (its apply waits ${p.delayMs / 1000} s)`);
  // Reads at the leaders — n0 leads a tablet and holds only its intents — before n0's delay ends.
  const rows = await lab.client.table(TABLE).scan({ timeoutMs: 120_000, pageSize: op.batch });
  const kind: Digest = p.viaSql ? 'md5' : 'sha256';
  const complete = rows.length === p.rows && rows.every((r) => op.digests.get(BigInt(r['id'] as bigint)) === digestOf(kind, String(r['value'])));
  const readDoneMs = Math.round(lab.now() - committedAt);
  figures['readAfterCommitMs'] = readDoneMs;
  check(
    'right after commit, reads at the leaders return every committed row while n0 holds only intents',
    complete && readDoneMs < p.delayMs,
    `${rows.length}/${p.rows} rows read back intact (${kind} of each value), done ${readDoneMs} ms after commit` + (readDoneMs < p.delayMs ? ` (before n0's ${p.delayMs} ms delay ended)` : `, after n0's delay ended: give a longer --delay-ms`),
  );
  return { committedAt, commitWallMicros };
}

/** After the delay: n0's RegularDB did not move until then, then grew as the others'; same contents everywhere. */
async function afterDelayPhase(run: Run, op: Opened, cm: { committedAt: number; commitWallMicros: number }): Promise<void> {
  const { lab, nodes, p, figures, check, written } = run;
  const all = await waitUntil(async () => {
    const s = await snapshot(nodes);
    return s.size === 3 && [...s.values()].every((m) => m.size === 3 && [...m.values()].every((r) => r.intentsdb.intentCount === 0)) ? s : undefined;
  }, { timeoutMs: p.delayMs + 60_000, intervalMs: 250, what: 'every replica to apply' }).catch(() => undefined);
  const appliedAllMs = lab.now() - cm.committedAt;
  figures['n0ApplyAfterCommitMs'] = Math.round(appliedAllMs);
  const after = all ?? (await snapshot(nodes));
  lab.timeline.push(...phaseTable('after the delay', after));
  const n0Base = nodeRegularMem(op.openSnap, 'n0');
  const still = largestRegularChange(run.samples, 'n0', n0Base, cm.committedAt, cm.committedAt + p.delayMs - DELAY_END_MARGIN_MS);
  check(
    "until n0's delay ends, n0's RegularDB memtable stays as it was",
    still.samples > 0 && still.changeBytes < Math.min(UNCHANGED_BYTES_MAX, 0.1 * written),
    `${still.samples} samples from the commit to ${((p.delayMs - DELAY_END_MARGIN_MS) / 1000).toFixed(0)} s after it: changed by ${humanBytes(still.changeBytes)} at most (from ${humanBytes(n0Base)})`,
  );
  check('after the delay, n0 applied too (no intents left anywhere)', all !== undefined && appliedAllMs >= p.delayMs - 500, all ? `${Math.round(appliedAllMs)} ms after commit (delay ${p.delayMs} ms)` : 'intents remain');
  const g0 = regularGrowth(op.openSnap, after, op.openSnap, 'n0');
  figures['n0RegularMemtableGrowthBytes'] = g0.reduce((a, x) => a + x.grewBytes, 0);
  check(
    "after the delay, n0's RegularDB memtable of each tablet grew by about its IntentsDB memtable, as n1's and n2's did",
    growthOk(g0),
    g0.map((x) => `${x.id.slice(0, 8)}: +${humanBytes(x.grewBytes)} (×${x.ratio.toFixed(2)})`).join('; '),
  );
  await run.camera?.take('3-applied', `after the delay: n0 applied too, ${humanBytes(Number(figures['n0RegularMemtableGrowthBytes']))} in its RegularDB memtable`);
  await checkAppliesAndContents(nodes, op.txn.txnId, cm.commitWallMicros, p, figures, check, tabletIds(after));
}

export function intentsApply(params: Partial<IntentsApplyParams> = {}) {
  const p: IntentsApplyParams = { ...INTENTS_APPLY_DEFAULTS, ...params };
  return async (o: ExperimentOptions): Promise<ExperimentResult> => {
    // Every memtable exactly memstore_size_mb (the default, 128 MiB as YugabyteDB's): the replicas'
    // memtables are compared byte for byte, which a spread of sizes would make differ.
    const lab = await openExperimentLab(o, 'intents-apply', { memstore_size_spread_pct: '0' });
    const checks: Check[] = [];
    const written = p.rows * p.rowBytes;
    const run: Run = {
      lab,
      o,
      p,
      nodes: lab.driver.addresses(),
      written,
      figures: { rows: p.rows, rowBytes: p.rowBytes, delayMs: p.delayMs, writtenBytes: written },
      check: (name, ok, detail) => {
        checks.push({ name, ok, detail });
        lab.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
      },
      samples: [],
    };
    let stopSampler: (() => void) | undefined;
    try {
      const masterWeb = run.nodes.find((n) => n.master)?.master?.webUrl;
      await setUpTable(run);
      if (masterWeb) run.camera = await openCamera(lab, o, `${masterWeb}/apply-timeline?table=${TABLE}`);
      stopSampler = startSampler(lab, run.nodes, run.samples);
      lab.timeline.push(...phaseTable('before insert', await snapshot(run.nodes)));
      const op = await openPhase(run);
      const cm = await commitPhase(run, op);
      await afterDelayPhase(run, op, cm);
      run.figures['tserverRssMaxBytes'] = await tserverRssMax(masterWeb);
      await sleep(2 * SAMPLE_INTERVAL_MS); // one more chart sample after the last apply
      stopSampler();
      const markers = [
        { x: cm.committedAt, label: 'commit' },
        { x: cm.committedAt + p.delayMs, label: `n0's delay ends (${p.delayMs / 1000} s)` },
      ];
      return {
        name: 'intents-apply',
        title: 'Intents applied independently by each replica',
        summary: `3 nodes (${lab.driver.kind} driver), ${DELAY_FLAG}=${p.delayMs} on n0, memtables of 128 MiB; one transaction${p.viaSql ? " (the blog's SQL through n1's port 5433)" : ''} wrote ${p.rows} rows of ${p.rowBytes} random printable bytes into table ${TABLE} (3 tablets, RF 3), was left open, then committed.`,
        checks,
        figures: run.figures,
        charts: [
          { title: `IntentsDB memtable bytes per node (table ${TABLE}, all tablets)`, series: nodeSeries(run.samples, NODES, nodeIntentsMem), yUnit: 'bytes', markers },
          { title: `RegularDB memtable bytes per node (table ${TABLE}, all tablets)`, series: nodeSeries(run.samples, NODES, nodeRegularMem), yUnit: 'bytes', markers },
        ],
        ...(run.camera ? { screenshots: run.camera.shots } : {}),
        timeline: lab.timeline,
      };
    } finally {
      stopSampler?.();
      await run.camera?.close().catch(() => undefined);
      await lab.close();
    }
  };
}

/** Each replica's own record of its applies (/api/v1/txn-applies) and equal RegularDB contents at the end. */
async function checkAppliesAndContents(
  nodes: readonly NodeAddresses[],
  txnId: string | undefined,
  commitWallMicros: number,
  p: IntentsApplyParams,
  figures: Record<string, number | string>,
  check: (name: string, ok: boolean, detail: string) => void,
  tablets: readonly string[],
): Promise<void> {
  const lags = await Promise.all(
    nodes.map(async (n) => {
      const body = (await getJson(`${n.tserver.webUrl}/api/v1/txn-applies?since=${Math.floor(commitWallMicros - 1_000_000)}`)) as { applies: Array<{ tabletId: string; txnId: string; lagMs: number }> };
      // Through SQL the transaction's id is not known here: the demo tablets apply no other one.
      const mine = body.applies.filter((a) => (txnId !== undefined ? a.txnId === txnId : tablets.includes(a.tabletId)));
      return { node: n.name, tablets: new Set(mine.map((a) => a.tabletId)).size, maxLagMs: Math.max(0, ...mine.map((a) => a.lagMs)) };
    }),
  );
  const lagOf = (n: string): number => lags.find((l) => l.node === n)?.maxLagMs ?? 0;
  figures['n0ApplyLagMs'] = Math.round(lagOf('n0'));
  figures['n1n2ApplyLagMs'] = Math.round(Math.max(lagOf('n1'), lagOf('n2')));
  check(
    "each replica's console records its own apply: n0's lag is the delay, n1's and n2's far below it",
    lags.every((l) => l.tablets === 3) && lagOf('n0') >= p.delayMs - 500 && Math.max(lagOf('n1'), lagOf('n2')) < p.delayMs,
    lags.map((l) => `${l.node}: ${l.tablets} tablets, lag up to ${Math.round(l.maxLagMs)} ms`).join('; '),
  );
  const digests = await Promise.all(
    tablets.map(async (id) => {
      const d = await Promise.all(nodes.map(async (n) => ((await getJson(`${n.tserver.webUrl}/api/v1/tablet-checksum?id=${id}`, 60_000)) as { regulardb: { sha256: string; entries: number } }).regulardb));
      return { id, same: d.every((x) => x.sha256 === d[0]!.sha256 && x.entries > 0), entries: d[0]!.entries };
    }),
  );
  check('after the delay, all replicas hold the same RegularDB contents', digests.length === 3 && digests.every((x) => x.same), digests.map((x) => `${x.id.slice(0, 8)}: ${x.same ? 'equal' : 'DIFFERENT'} (${x.entries} entries)`).join('; '));
}
