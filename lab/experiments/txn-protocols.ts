/**
 * txn-protocols: the same bank through YugabyteDB-style transactions (status tablet, intents in the
 * tablets: docs/transactions.md) and Percolator's (client-built over single-row operations, oracle
 * timestamps, a primary lock: docs/percolator.md) on one cluster, side by side. First a load: clients
 * transfer money between accounts for a few seconds through each protocol in turn — throughput,
 * latency, failures by code, and the total kept. Then a client dies mid-commit in each protocol, and
 * another client wants the same rows: how long it waits and who cleans up.
 * - YugabyteDB-style: the dead client's transaction has written its intents and stops heartbeating;
 *   the next writer of those rows meets the intents, and either aborts the transaction (it ranks
 *   higher) or fails and retries until the status tablet expires the record
 *   (transaction_max_missed_heartbeat_periods); the tablets then drop the intents.
 * - Percolator, died after prewrite: its locks stay; the next reader waits for the lock's TTL or until
 *   the owner's liveness lock lapses, then rolls it back itself. Died after the primary's commit record:
 *   the next reader rolls the secondary forward, so the transfer shows whole.
 */
import * as hdr from 'hdr-histogram-js';
import { TesseraClient } from '../../client/tessera-client';
import { DbError, ErrorCode } from '../../common/errors';
import { labConnectOptions } from '../cluster-driver';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab, type ExperimentLab } from './experiment-lab';
import type { ChartSeries } from './report';

const ACCOUNTS = 20;
const INITIAL = 1_000n;
const CLIENTS = 8;
const PHASE_MS = 4_000;
const TRANSFERS_MAX = 10_000;
const BUCKET_MS = 500;
/** How long the client after a death keeps trying to transfer between the dead one's rows. */
const RECOVERY_DEADLINE_MS = 60_000;
const YB = 'ybank';
const PC = 'pbank';

type Protocol = 'yugabyte' | 'percolator';

interface Load {
  ok: number;
  failures: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  perBucket: number[];
}

async function transfer(client: TesseraClient, p: Protocol, from: number, to: number, o: { timeoutMs?: number; dieAfter?: 'prewrite' | 'primary'; lockTtlMs?: number } = {}): Promise<void> {
  const amount = 1n;
  if (p === 'yugabyte') {
    const txn = await client.beginTransaction({ ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) });
    try {
      const t = txn.table(YB);
      const [a, b] = await Promise.all([t.get({ id: BigInt(from) }), t.get({ id: BigInt(to) })]);
      await Promise.all([t.upsert({ id: BigInt(from), bal: (a!['bal'] as bigint) - amount }), t.upsert({ id: BigInt(to), bal: (b!['bal'] as bigint) + amount })]);
      await txn.commit();
    } catch (e) {
      await txn.abort().catch(() => undefined);
      throw e;
    }
    return;
  }
  const t = await client.percolator.begin({ ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}), ...(o.dieAfter ? { TEST_dieAfter: o.dieAfter } : {}), ...(o.lockTtlMs ? { lockTtlMs: o.lockTtlMs } : {}) });
  try {
    const [a, b] = await Promise.all([t.get(PC, { id: BigInt(from) }), t.get(PC, { id: BigInt(to) })]);
    await t.put(PC, { id: BigInt(from), bal: (a!['bal'] as bigint) - amount });
    await t.put(PC, { id: BigInt(to), bal: (b!['bal'] as bigint) + amount });
    await t.commit();
  } catch (e) {
    if (t.state === 'open') await t.abort().catch(() => undefined);
    throw e;
  }
}

async function balances(client: TesseraClient, p: Protocol): Promise<bigint[]> {
  if (p === 'yugabyte') {
    const rows = await client.table(YB).scan();
    const out = new Array<bigint>(ACCOUNTS).fill(0n);
    for (const r of rows) out[Number(r['id'] as bigint)] = r['bal'] as bigint;
    return out;
  }
  const t = await client.percolator.begin({ timeoutMs: 30_000 });
  try {
    const rows = await Promise.all(Array.from({ length: ACCOUNTS }, (_, i) => t.get(PC, { id: BigInt(i) })));
    return rows.map((r) => (r?.['bal'] as bigint | undefined) ?? 0n);
  } finally {
    await t.abort().catch(() => undefined);
  }
}

const sum = (xs: bigint[]): bigint => xs.reduce((a, b) => a + b, 0n);

async function runLoad(lab: ExperimentLab, p: Protocol): Promise<Load> {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  const failures: Record<string, number> = {};
  const perBucket = new Array<number>(Math.ceil(PHASE_MS / BUCKET_MS)).fill(0);
  let ok = 0;
  const start = performance.now();
  const end = start + PHASE_MS;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < TRANSFERS_MAX && performance.now() < end; i++) {
        const from = (c * 7 + i * 3) % ACCOUNTS;
        const to = (from + 1 + ((c + i) % (ACCOUNTS - 1))) % ACCOUNTS;
        const t0 = performance.now();
        try {
          await transfer(lab.client, p, from, to, { timeoutMs: 5_000 });
          ok++;
          h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
          const b = Math.floor((performance.now() - start) / BUCKET_MS);
          if (b < perBucket.length) perBucket[b]!++;
        } catch (e) {
          const code = e instanceof DbError ? e.code : 'ERROR';
          failures[code] = (failures[code] ?? 0) + 1;
        }
      }
    }),
  );
  const r = { ok, failures, p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, perBucket };
  h.destroy();
  return r;
}

/** Transfer between `from` and `to` until one commits (bounded); how long it took and what failed meanwhile. */
async function recover(client: TesseraClient, p: Protocol, from: number, to: number): Promise<{ waitMs: number; failures: Record<string, number> }> {
  const t0 = performance.now();
  const failures: Record<string, number> = {};
  for (;;) {
    try {
      await transfer(client, p, from, to, { timeoutMs: 10_000 });
      return { waitMs: Math.round(performance.now() - t0), failures };
    } catch (e) {
      const code = e instanceof DbError ? e.code : 'ERROR';
      failures[code] = (failures[code] ?? 0) + 1;
      if (performance.now() - t0 > RECOVERY_DEADLINE_MS) throw new DbError(ErrorCode.TIMED_OUT, `no transfer between accounts ${from} and ${to} committed within ${RECOVERY_DEADLINE_MS} ms after the client died (${JSON.stringify(failures)})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

const showLoad = (l: Load): string => `${l.ok} transfers (${((l.ok * 1000) / PHASE_MS).toFixed(0)}/s), p50 ${l.p50Ms.toFixed(1)} ms, p99 ${l.p99Ms.toFixed(1)} ms, failed: ${Object.entries(l.failures).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`;
const showFailures = (f: Record<string, number>): string => Object.entries(f).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function txnProtocols(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'txn-protocols');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const connect = (): Promise<TesseraClient> => TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: 10_000 });
  try {
    const cols = [{ name: 'id', type: 'int64' as const }, { name: 'bal', type: 'int64' as const }];
    await lab.client.createTable({ name: YB, columns: cols, primaryKey: { hash: ['id'] }, numTablets: 3 });
    await lab.client.percolator.createTable({ name: PC, columns: cols, primaryKey: { hash: ['id'] }, numTablets: 3 });
    await lab.client.table(YB).upsertMany(Array.from({ length: ACCOUNTS }, (_, i) => ({ id: BigInt(i), bal: INITIAL })));
    const init = await lab.client.percolator.begin({ timeoutMs: 30_000 });
    for (let i = 0; i < ACCOUNTS; i++) await init.put(PC, { id: BigInt(i), bal: INITIAL });
    await init.commit();
    const total = INITIAL * BigInt(ACCOUNTS);
    lab.log(`${ACCOUNTS} accounts of ${INITIAL} in ${YB} (YugabyteDB-style) and ${PC} (Percolator); ${CLIENTS} clients transfer for ${PHASE_MS} ms through each`);

    const loads: Record<Protocol, Load> = { yugabyte: await runLoad(lab, 'yugabyte'), percolator: await runLoad(lab, 'percolator') };
    for (const p of ['yugabyte', 'percolator'] as const) {
      const l = loads[p];
      const after = sum(await balances(lab.client, p));
      lab.log(`${p}: ${showLoad(l)}; total ${after}`);
      checks.push({ name: `${p}: the load commits transfers and keeps the total`, ok: l.ok > 0 && after === total, detail: `${showLoad(l)}; total ${after} (expected ${total})` });
      figures[`${p}TransfersPerSec`] = Number(((l.ok * 1000) / PHASE_MS).toFixed(1));
      figures[`${p}P50Ms`] = Number(l.p50Ms.toFixed(1));
      figures[`${p}P99Ms`] = Number(l.p99Ms.toFixed(1));
      figures[`${p}Failures`] = showFailures(l.failures);
    }

    // YugabyteDB-style: the dead client's intents are written, its heartbeats stop, no abort is sent.
    const ybBefore = await balances(lab.client, 'yugabyte');
    const ybDead = await connect();
    const dead = await ybDead.beginTransaction();
    await Promise.all([dead.table(YB).upsert({ id: 0n, bal: ybBefore[0]! - 500n }), dead.table(YB).upsert({ id: 1n, bal: ybBefore[1]! + 500n })]);
    dead.close();
    lab.log(`yugabyte: a client wrote the intents of a transfer 0 → 1 and died (no commit, no abort, no heartbeats)`);
    const yb = await recover(lab.client, 'yugabyte', 0, 1);
    const ybAfter = await balances(lab.client, 'yugabyte');
    lab.log(`yugabyte: the next transfer 0 → 1 committed after ${yb.waitMs} ms (failed meanwhile: ${showFailures(yb.failures)})`);
    checks.push({ name: 'yugabyte: after a client died holding intents, another client writes the rows; the dead transfer never shows', ok: ybAfter[0] === ybBefore[0]! - 1n && ybAfter[1] === ybBefore[1]! + 1n && sum(ybAfter) === total, detail: `waited ${yb.waitMs} ms; failed meanwhile: ${showFailures(yb.failures)}; balances 0,1: ${ybBefore[0]},${ybBefore[1]} → ${ybAfter[0]},${ybAfter[1]}` });
    figures['yugabyteDeadClientWaitMs'] = yb.waitMs;
    await ybDead.close();

    // Percolator, died after prewrite: locks with the default TTL, owner token no longer renewed.
    const pcBefore = await balances(lab.client, 'percolator');
    const pcDead = await connect();
    await transfer(pcDead, 'percolator', 2, 3, { dieAfter: 'prewrite' });
    pcDead.percolator.TEST_crash();
    const back0 = lab.client.percolator.stats.rolledBack;
    lab.log('percolator: a client prewrote a transfer 2 → 3 and died (locks left, liveness token no longer renewed)');
    const pc = await recover(lab.client, 'percolator', 2, 3);
    const pcAfter = await balances(lab.client, 'percolator');
    const rolledBack = lab.client.percolator.stats.rolledBack - back0;
    lab.log(`percolator: the next transfer 2 → 3 committed after ${pc.waitMs} ms, having rolled back ${rolledBack} lock(s) (failed meanwhile: ${showFailures(pc.failures)})`);
    checks.push({ name: 'percolator: a client that died after prewrite is rolled back by the next reader, who then commits; the dead transfer never shows', ok: rolledBack > 0 && pcAfter[2] === pcBefore[2]! - 1n && pcAfter[3] === pcBefore[3]! + 1n && sum(pcAfter) === total, detail: `waited ${pc.waitMs} ms; rolled back ${rolledBack}; balances 2,3: ${pcBefore[2]},${pcBefore[3]} → ${pcAfter[2]},${pcAfter[3]}` });
    figures['percolatorDeadAfterPrewriteWaitMs'] = pc.waitMs;
    await pcDead.close();

    // Percolator, died right after the primary's commit record: the commit point passed.
    const fwdBefore = await balances(lab.client, 'percolator');
    const pcHalf = await connect();
    await transfer(pcHalf, 'percolator', 4, 5, { dieAfter: 'primary' });
    pcHalf.percolator.TEST_crash();
    const fwd0 = lab.client.percolator.stats.rolledForward;
    const fwdAfter = await balances(lab.client, 'percolator');
    const rolledForward = lab.client.percolator.stats.rolledForward - fwd0;
    lab.log(`percolator: a client committed the primary of a transfer 4 → 5 and died; the next reader rolled ${rolledForward} secondary forward`);
    checks.push({ name: 'percolator: a client that died after the primary\'s commit is rolled forward by the next reader: the transfer shows whole', ok: rolledForward > 0 && fwdAfter[4] === fwdBefore[4]! - 1n && fwdAfter[5] === fwdBefore[5]! + 1n && sum(fwdAfter) === total, detail: `rolled forward ${rolledForward}; balances 4,5: ${fwdBefore[4]},${fwdBefore[5]} → ${fwdAfter[4]},${fwdAfter[5]}` });
    await pcHalf.close();

    const series: ChartSeries[] = (['yugabyte', 'percolator'] as const).map((p) => ({ name: `${p} transfers/s`, points: loads[p].perBucket.map((n, i): [number, number] => [(i + 1) * BUCKET_MS, (n * 1000) / BUCKET_MS]) }));
    return {
      name: 'txn-protocols',
      title: 'YugabyteDB-style and Percolator transactions on one cluster',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3). ${ACCOUNTS} accounts in a table per protocol; ${CLIENTS} clients transfer for ${PHASE_MS / 1000} s through each protocol in turn; then in each protocol a client dies mid-commit and another wants the same rows.`,
      checks,
      figures,
      chart: { title: 'transfers per second during each protocol\'s load (x: ms since its start)', series, yLabel: 'transfers/s' },
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
