/**
 * Jepsen-style verification on real processes (issue 9): each workload runs on a fresh
 * 1-master/3-tserver cluster under a mixed seeded nemesis until its history counts (>= 1,000 ok
 * operations and >= 1 applied fault window, then a second of recovery) or RUN_CAP_MS passes, and the
 * checkers must find no anomaly (the crash loop is in verify-crash.test.ts). Node i listens on 127.0.0.(90+i); the test files' clusters never share
 * addresses.
 *
 * A run that ends at the cap short of 1,000 ok ops is 'vacuous' — printed as such, never a pass in
 * the report; the transactional workloads accept it here (how fast transactions are on a loaded
 * 2-core machine is not what this suite asserts), the others must count.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseNemesisKinds } from '../../lab/verify/nemesis-schedule';
import { runWorkload, type WorkloadName } from '../../lab/verify/verify-runner';
import { MIN_OK_OPS, verdictLine, type WorkloadReport } from '../../lab/verify/verify-report';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-verify-it-'));
/** A run with anomalies keeps its histories (history-<workload>.json) for the report. */
let keepForAnomalies = false;
afterAll(() => {
  if (keepForAnomalies) process.stdout.write(`histories with anomalies kept in ${DIR}\n`);
  else if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(DIR, { recursive: true, force: true });
});
const HOST_BASE = 90;
const MIXED = parseNemesisKinds('kill,pause,partition,skew,stepdown');
/** Longest a workload's op loop runs; it ends earlier once the history counts. */
const RUN_CAP_MS = 40_000;
/** Short per-operation deadlines: a fault costs a second of a process, not the run. */
const OP_TIMEOUT_MS = 1_000;
const CONCURRENCY: Record<WorkloadName, number> = { register: 20, set: 16, bank: 16, append: 12, counter: 16, lock: 12 };

/**
 * Anomalies a workload is known to show on this tree, each a server-side bug reported with issue 9's
 * verification notes; the run still prints them (and keeps its history), but they do not fail
 * npm test. Remove an entry when its bug is fixed. Empty: every anomaly fails the suite.
 *
 * Fixed and covered here (each with a unit regression test):
 *  - bank fractured read: a GetTransactionStatus answered PENDING while the commit, its time already
 *    chosen, was being replicated (coordinator waits for the in-flight change);
 *  - register lost update of a plain write over a pending transaction's intent (plain writes resolve
 *    intents: txn-tablet.test.ts);
 *  - register stale reads and lost updates between cas transactions, bank wrong totals: a status
 *    tablet forgets a committed transaction once every participant applied it and then answers
 *    ABORTED; a reader or writer that met the intents just before they were applied and asked
 *    meanwhile skipped them (txn-tablet.test.ts "forgot a committed transaction"; reproduced with
 *    `tessera verify --workload register --register_writes txn --seed 12 --concurrency 20
 *    --op_timeout_ms 1000 --nemesis kill,pause,partition,stepdown`);
 *  - Percolator bank wrong total (a transfer seen half: one account +1): a checkAndMutate whose Raft
 *    entry timed out released its row's lock while the entry could still commit, so the next
 *    checkAndMutate of the row (a reader rolling the primary back) judged its condition without it
 *    and both applied — a lost update of the primary's commit record (row-ops.test.ts "timed out";
 *    reproduced with `tessera verify --workload bank --txn_protocol percolator --nemesis
 *    client-crash,kill,pause,partition,stepdown --time 120 --until_counted --seed 23`).
 */
const KNOWN: Partial<Record<WorkloadName, ReadonlySet<string>>> = {};


async function run(workload: WorkloadName, seed: number, extra: { registerWrites?: 'direct' | 'txn'; txnProtocol?: 'percolator'; clientCrash?: boolean; secure?: boolean; deferTxnWrites?: boolean; dirName?: string; masters?: 3; nemesis?: string; isolation?: 'serializable'; timeMs?: number; fullTime?: boolean } = {}): Promise<WorkloadReport> {
  const r = await runWorkload({
    workload,
    ...(extra.isolation ? { isolation: extra.isolation } : {}),
    ...(extra.registerWrites ? { registerWrites: extra.registerWrites } : {}),
    ...(extra.txnProtocol ? { txnProtocol: extra.txnProtocol } : {}),
    ...(extra.clientCrash ? { clientCrash: true } : {}),
    ...(extra.secure ? { secure: true } : {}),
    ...(extra.deferTxnWrites ? { deferTxnWrites: true } : {}),
    ...(extra.masters ? { masters: extra.masters } : {}),
    nemesis: extra.nemesis ? parseNemesisKinds(extra.nemesis) : MIXED,
    timeMs: extra.timeMs ?? RUN_CAP_MS,
    endWhenCounted: !extra.fullTime,
    opTimeoutMs: OP_TIMEOUT_MS,
    concurrency: CONCURRENCY[workload],
    seed,
    dir: path.join(DIR, extra.dirName ?? workload),
    hostBase: HOST_BASE,
    portOffset: 0,
    log: () => undefined,
  });
  process.stdout.write(`${verdictLine(r)} [${r.timeMs} ms]\n`);
  for (const f of r.faults) process.stdout.write(`  ${f.kind} ${f.target}: ${f.skipped ? `SKIPPED ${f.skipped}` : `ok in window ${f.okInWindow}, longest gap without ok ${f.longestGapMs} ms`}\n`);
  // An INVALID run prints its whole excerpts; otherwise a line each is enough.
  for (const d of r.details) process.stdout.write(`  - ${r.verdict === 'INVALID' ? d : d.slice(0, 400)}\n`);
  if (r.verdict === 'INVALID') keepForAnomalies = true;
  for (const a of Object.keys(r.anomalies)) if (KNOWN[workload]?.has(a)) process.stdout.write(`  KNOWN ANOMALY ${workload}/${a} (a reported server bug; see KNOWN in this file)\n`);
  if (r.verdict === 'vacuous') process.stdout.write(`  VACUOUS ${workload}: ${r.counts.ok} ok ops in ${r.timeMs} ms (cap ${extra.timeMs ?? RUN_CAP_MS} ms) — this history does not count as a pass\n`);
  // Every run ends with the replica convergence check (a divergence is the anomaly replica-divergence).
  expect(r.convergence, 'replica convergence checked').toBeDefined();
  expect(r.convergence!.converged).toBeGreaterThan(0);
  // The mid-run pass is reported too: every tablet either compared (none diverged) or named as unsettled.
  expect(r.convergenceMidRun, 'mid-run convergence reported').toBeDefined();
  expect(r.convergenceMidRun!.converged + r.convergenceMidRun!.unsettled.length).toBe(r.convergenceMidRun!.tablets);
  expect(r.convergenceMidRun!.diverged).toEqual([]);
  // And with the drain check: no replica keeps a provisional record of a finished transaction (intents-left-over).
  expect(r.drain, 'provisional records drain checked').toBeDefined();
  expect(r.drain!.drained, JSON.stringify(r.drain)).toBe(true);
  // … and every replica's strong-intent counter read 0 then (intent-count-drift otherwise).
  expect(r.drain!.countDrift, JSON.stringify(r.drain)).toEqual([]);
  expect(r.drain!.countsUnread, JSON.stringify(r.drain)).toEqual([]);
  return r;
}

function unexpected(workload: WorkloadName, r: WorkloadReport): string[] {
  return Object.keys(r.anomalies).filter((a) => !KNOWN[workload]?.has(a));
}

describe('verify: Jepsen-style workloads on a real cluster', () => {
  it('verify: register reads, writes and compare-and-set stay linearizable per key under kill/pause/partition/skew/stepdown', async () => {
    const r = await run('register', 11);
    expect(unexpected('register', r)).toEqual([]);
    // valid, or INVALID only through a known (reported) anomaly; never vacuous or unknown.
    expect(r.verdict).toBe(Object.keys(r.anomalies).length ? 'INVALID' : 'valid');
    expect(r.counts.ok).toBeGreaterThanOrEqual(MIN_OK_OPS);
    expect(r.faults.filter((f) => !f.skipped).length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('verify: register with every write a one-row transaction (reads meet intents being applied and forgotten) stays linearizable under the mixed nemesis', async () => {
    const r = await run('register', 12, { registerWrites: 'txn', dirName: 'register-txn' });
    expect(unexpected('register', r)).toEqual([]);
    expect(r.verdict).toBe(Object.keys(r.anomalies).length ? 'INVALID' : 'valid');
    expect(r.counts.ok).toBeGreaterThanOrEqual(MIN_OK_OPS);
  }, 120_000);

  it('verify: on a secured cluster (TLS on every RPC and console, a cluster secret) register stays linearizable under the mixed nemesis', async () => {
    const r = await run('register', 31, { secure: true, dirName: 'register-secure' });
    expect(unexpected('register', r)).toEqual([]);
    expect(r.verdict).toBe('valid');
  }, 120_000);

  it('verify: with the single-tablet fast path (writes kept to the commit), register with transactional writes stays linearizable and bank keeps its total under the mixed nemesis', async () => {
    const reg = await run('register', 6204, { registerWrites: 'txn', deferTxnWrites: true, dirName: 'register-fast-path' });
    expect(unexpected('register', reg)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(reg.verdict);
    const bank = await run('bank', 6202, { deferTxnWrites: true, dirName: 'bank-fast-path' });
    expect(unexpected('bank', bank)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(bank.verdict);
    expect(reg.counts.ok + bank.counts.ok).toBeGreaterThan(0);
  }, 240_000);

  it('verify: register stays linearizable while tablets split at random keys under it (split nemesis); every child\'s replicas converge', async () => {
    const r = await run('register', 7, { nemesis: 'split', dirName: 'register-split', timeMs: 75_000 });
    expect(unexpected('register', r)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(r.verdict);
    expect(r.faults.some((f) => f.kind === 'split' && !f.skipped), JSON.stringify(r.faults)).toBe(true);
  }, 150_000);

  it('verify: set loses no acknowledged insert under the mixed nemesis', async () => {
    const r = await run('set', 12);
    expect(r.lostWrites).toBe(0);
    expect(unexpected('set', r)).toEqual([]);
    expect(r.verdict).toBe('valid');
  }, 120_000);

  it('verify: with 3 masters, set loses nothing while the sys catalog leader is killed and restarted', async () => {
    // Seed 40's schedule for kill,pause opens with a kill of the master (the leader, with 3 masters).
    const r = await run('set', 40, { masters: 3, nemesis: 'kill,pause', dirName: 'set-3-masters' });
    expect(r.masters).toBe(3);
    expect(verdictLine(r)).toContain('set [3 masters]: valid');
    expect(r.faults.some((f) => f.kind === 'kill' && f.target.startsWith('master leader') && !f.skipped)).toBe(true);
    expect(r.lostWrites).toBe(0);
    expect(r.verdict).toBe('valid');
  }, 120_000);

  it('verify: register with transactional writes stays linearizable while ALTER TABLE changes the table\'s schema under it (alter nemesis, with stepdowns)', async () => {
    const r = await run('register', 15, { registerWrites: 'txn', dirName: 'register-alter', nemesis: 'alter,stepdown' });
    expect(unexpected('register', r)).toEqual([]);
    expect(r.verdict).toBe(Object.keys(r.anomalies).length ? 'INVALID' : 'valid');
    expect(r.counts.ok).toBeGreaterThanOrEqual(MIN_OK_OPS);
    const alters = r.faults.filter((f) => f.kind === 'alter' && !f.skipped);
    expect(alters.length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('verify: bank transfers keep the total in every read (no new anomaly) under the mixed nemesis', async () => {
    const r = await run('bank', 13);
    expect(unexpected('bank', r)).toEqual([]);
    // valid or vacuous, or INVALID only through the known (reported) anomaly.
    expect(['valid', 'vacuous', ...(Object.keys(r.anomalies).length ? ['INVALID'] : [])]).toContain(r.verdict);
    expect(r.counts.ok).toBeGreaterThan(0);
  }, 120_000);

  it('verify: bank through Percolator transactions keeps the total under the mixed nemesis while clients die mid-commit (client-crash), no lock left orphaned; list-append through Percolator shows no anomaly beyond snapshot isolation', async () => {
    const r = await run('bank', 23, { txnProtocol: 'percolator', clientCrash: true, dirName: 'bank-percolator' });
    expect(Object.keys(r.anomalies)).toEqual([]);
    expect(r.anomalies['orphaned-lock'], 'locks left after the final read').toBeUndefined();
    expect(['valid', 'vacuous']).toContain(r.verdict);
    expect(r.details.some((d) => /locks left in the raw rows after the final read: 0/.test(d)), r.details.join('\n')).toBe(true);
    expect(r.counts.ok).toBeGreaterThan(0);
    // List-append through Percolator: snapshot isolation's anomalies only (G2-item, write skew, is allowed).
    const a = await run('append', 24, { txnProtocol: 'percolator', dirName: 'append-percolator' });
    expect(unexpected('append', a)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(a.verdict);
  }, 240_000);

  it('verify: bank transfers keep the total while two nodes cannot reach each other but the third reaches both (bridge nemesis)', async () => {
    // Must end valid, not vacuous: a longer cap than the default (the run still ends once its history
    // counts), since bank's ~25 ok transfers/s under bridges can miss 1,000 ok ops in 40 s (CI: 979).
    const r = await run('bank', 16, { nemesis: 'bridge', dirName: 'bank-bridge', timeMs: 75_000 });
    expect(unexpected('bank', r)).toEqual([]);
    expect(r.verdict).toBe('valid');
    const bridges = r.faults.filter((f) => f.kind === 'bridge' && !f.skipped);
    expect(bridges.length, JSON.stringify(r.faults)).toBeGreaterThanOrEqual(1);
    expect(bridges[0]!.target).toMatch(/^nodes \d and \d cut apart.*node \d reaching both$/);
    // The cut took effect: the two nodes' tservers counted the Raft messages they dropped.
    for (const f of bridges) expect(f.note ?? '').toMatch(/^[1-9]\d* Raft messages dropped between the two/);
    // A partial partition leaves a majority that hears every leader: transfers go on during it.
    expect(bridges.every((f) => f.okInWindow > 0), JSON.stringify(bridges)).toBe(true);
  }, 150_000);

  it('verify: bank transfers keep the total while tablet replicas fail and are rebuilt, with kills (rebuild nemesis); every replica\'s intent counter ends at 0', async () => {
    // Seed 7420 found the removeIntents double count (stale reads after a rebuilt replica led); with
    // that fix undone this run ends INVALID with intent-count-drift (and often wrong-total).
    // The whole 45 s: the double count needs a rebuilt replica to replay a log holding an APPLY and a
    // REMOVE of one transaction, which the first few windows (all an early end would run) rarely give.
    const r = await run('bank', 7420, { nemesis: 'rebuild,kill', dirName: 'bank-rebuild', timeMs: 45_000, fullTime: true });
    expect(unexpected('bank', r)).toEqual([]);
    expect(r.verdict).toBe('valid');
    const rebuilds = r.faults.filter((f) => f.kind === 'rebuild' && !f.skipped);
    expect(rebuilds.length, JSON.stringify(r.faults)).toBeGreaterThanOrEqual(1);
  }, 150_000);

  it('verify: list-append transactions show no snapshot-isolation anomaly under the mixed nemesis', async () => {
    const r = await run('append', 14);
    expect(unexpected('append', r)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(r.verdict);
    expect(r.counts.ok).toBeGreaterThan(0);
  }, 120_000);

  it('verify: list-append serializable transactions show no anomaly — G2-item (write skew) included — under the mixed nemesis', async () => {
    // Serializable transactions conflict more (reads lock): about 20 commit per second under this
    // nemesis here, so the history needs more than the usual cap to count (>= 1,000 ok).
    const r = await run('append', 15, { isolation: 'serializable', dirName: 'append-serializable', timeMs: 75_000 });
    expect(r.isolation).toBe('serializable');
    expect(verdictLine(r)).toContain('append [serializable]');
    expect(r.details.join('\n')).toContain('checked as serializable');
    expect(unexpected('append', r)).toEqual([]);
    expect(['valid', 'vacuous']).toContain(r.verdict);
    expect(r.counts.ok).toBeGreaterThan(0);
  }, 150_000);
});
