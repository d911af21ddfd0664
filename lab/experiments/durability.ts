/**
 * durability: the seed's hflush-vs-hsync point on tessera (docs/durability.md). For each table level
 * (ASYNC, FLUSH, FSYNC) and each fault — (a) kill -9 of every tserver at once, (b) a simulated power
 * loss of every tserver at once (TEST_simulate_power_loss: unsynced Raft log bytes dropped, RocksDB's
 * unsynced WAL gone, SIGKILL) — a bounded write load on a table of that level is hit by the fault while
 * writes are in flight; the tservers restart and the acknowledged writes that are gone are counted.
 * Checked: FLUSH loses nothing on (a), FSYNC loses nothing on either; ASYNC (both) and FLUSH on (b)
 * may lose. Each level's write rate before the fault is its price.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TableDurability } from '../../client/client-types';
import { makeDirs } from '../../common/fs-dirs';
import type { NodeName } from '../cluster-spec';
import { leadersByTablet, replicasViaDriver } from '../tablet-view';
import { formatTable } from '../text-table';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab, type ExperimentLab } from './experiment-lab';
import { WriteLoad } from './write-load';

const LEVELS: readonly TableDurability[] = ['ASYNC', 'FLUSH', 'FSYNC'];
const FAULTS = ['kill-9', 'power-loss'] as const;
type Fault = (typeof FAULTS)[number];
const NODES: readonly NodeName[] = ['n0', 'n1', 'n2'];
/** What each level promises per fault: true = no acknowledged write may be lost. */
const PROMISED: Record<TableDurability, Record<Fault, boolean>> = {
  ASYNC: { 'kill-9': false, 'power-loss': false },
  FLUSH: { 'kill-9': true, 'power-loss': false },
  FSYNC: { 'kill-9': true, 'power-loss': true },
};
const WRITE_TIMEOUT_MS = 5_000;
const LEADERS_TIMEOUT_MS = 60_000;

export interface DurabilityRow {
  level: TableDurability;
  fault: Fault;
  acked: number;
  lost: number;
  failed: number;
  writesPerSec: number;
}

export interface DurabilityParams {
  /** Acknowledged writes before the fault (bounded by loadMs too). */
  writes?: number;
  /** Longest load before the fault, ms. */
  loadMs?: number;
  /** Concurrent writers (each sequential). */
  writers?: number;
  /** interval_durable_wal_write_ms on the tservers (the ASYNC / FLUSH background flush). */
  intervalMs?: number;
}

export function durability(p: DurabilityParams = {}) {
  return async (o: ExperimentOptions): Promise<ExperimentResult> => {
    const writes = p.writes ?? 3000;
    const loadMs = p.loadMs ?? 10_000;
    const writers = p.writers ?? 32;
    const intervalMs = p.intervalMs ?? 1000;
    const lab = await openExperimentLab(o, 'durability', { TEST_wal_track_unsynced: 'true', interval_durable_wal_write_ms: String(intervalMs) });
    const rows: DurabilityRow[] = [];
    const checks: Check[] = [];
    try {
      for (const level of LEVELS) {
        const table = `dur_${level.toLowerCase()}`;
        await lab.client.createTable({ name: table, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, durability: level });
      }
      lab.log(`tables dur_async, dur_flush, dur_fsync created (3 tablets, RF 3); load: ${writers} writers, ${writes} writes or ${loadMs} ms per run`);
      for (const fault of FAULTS) {
        for (const level of LEVELS) rows.push(await runOne(lab, level, fault, { writes, loadMs, writers }));
      }
      for (const r of rows) {
        if (!PROMISED[r.level][r.fault]) continue;
        checks.push({ name: `${r.level} loses no acknowledged write on ${r.fault}`, ok: r.lost === 0 && r.acked > 0, detail: `${r.lost} of ${r.acked} acknowledged writes gone` });
      }
      const figures: Record<string, number | string> = {};
      for (const r of rows) {
        figures[`${r.level} ${r.fault} acked`] = r.acked;
        figures[`${r.level} ${r.fault} lost`] = r.lost;
        figures[`${r.level} ${r.fault} writesPerSec`] = r.writesPerSec;
      }
      const jsonPath = writeJson(o.baseDir, { writes, loadMs, writers, intervalMs, rows });
      lab.log(`results as JSON: ${jsonPath}`);
      o.progress(`\n${formatTable(['level', 'fault', 'acked', 'lost', 'failed', 'writes/s'], rows.map((r) => [r.level, r.fault, r.acked, r.lost, r.failed, r.writesPerSec]))}`);
      return {
        name: 'durability',
        title: 'Durability per table: ASYNC / FLUSH / FSYNC under kill -9 and power loss',
        summary: `A 3-node ${lab.driver.kind} lab (RF 3). For each level, ${writers} writers upsert fresh keys into a table of that level (3 tablets) until ${writes} writes are acknowledged or ${loadMs} ms pass; then, with writes in flight, every tserver is killed at once (kill -9) or loses power at once (unsynced Raft log bytes and RocksDB's WAL dropped, then SIGKILL); the tservers restart and every acknowledged write is read back. interval_durable_wal_write_ms=${intervalMs}.\n\n${markdownTable(rows)}`,
        checks,
        figures,
        timeline: lab.timeline,
      };
    } finally {
      await lab.close();
    }
  };
}

async function runOne(lab: ExperimentLab, level: TableDurability, fault: Fault, p: { writes: number; loadMs: number; writers: number }): Promise<DurabilityRow> {
  const table = `dur_${level.toLowerCase()}`;
  // Each fault's load writes keys of its own, so a value left by the other run never counts as kept.
  const load = new WriteLoad(lab.client, table, p.writers, lab.t0, WRITE_TIMEOUT_MS, FAULTS.indexOf(fault) * 1_000_000_000);
  const startMs = lab.now();
  load.start();
  try {
    await waitUntil(async () => load.ackCount() >= p.writes || lab.now() - startMs >= p.loadMs, { timeoutMs: p.loadMs + 30_000, intervalMs: 20, what: `${p.writes} acknowledged writes to ${table}` });
  } catch {
    // Bounded by time: whatever was acknowledged is measured.
  }
  const faultAt = lab.now();
  const ackedAtFault = load.ackCount();
  const writesPerSec = Math.round((ackedAtFault * 1000) / Math.max(1, faultAt - startMs));
  lab.log(`${level}: ${ackedAtFault} writes acknowledged in ${(faultAt - startMs).toFixed(0)} ms (${writesPerSec}/s); ${fault} of every tserver`);
  if (fault === 'power-loss') {
    await Promise.all(NODES.map((n) => lab.driver.setFlag(n, 'TEST_simulate_power_loss', 'true', false, 'tserver')));
    await waitUntil(async () => (await lab.driver.status()).nodes.every((n) => n.servers.every((s) => s.role !== 'tserver' || s.state === 'stopped')), { timeoutMs: 30_000, intervalMs: 20, what: 'every tserver down after its power loss' });
  }
  // (Power loss: the servers are down already; the driver only notes it.)
  await Promise.all(NODES.map((n) => lab.driver.kill(n, 'tserver')));
  const res = await load.stop();
  lab.log(`${level}: ${res.acks.length} acknowledged in all, ${res.failures} failed (outcome unknown); restarting the tservers`);
  await Promise.all(NODES.map((n) => lab.driver.start(n, 'tserver')));
  await waitUntil(
    async () => {
      const mine = [...leadersByTablet(await replicasViaDriver(lab.driver)).values()].filter((x) => x.row.table === table);
      return mine.length >= 3 ? true : undefined;
    },
    { timeoutMs: LEADERS_TIMEOUT_MS, intervalMs: 100, what: `a leader for every tablet of ${table}` },
  );
  const stored = new Map((await lab.client.table(table).scan({ timeoutMs: 60_000 })).map((r) => [r['id'] as bigint, r['v'] as string]));
  const lost = res.acks.filter((a) => stored.get(a.id) !== a.value).length;
  lab.log(`${level} after ${fault}: ${lost} of ${res.acks.length} acknowledged writes gone`);
  return { level, fault, acked: res.acks.length, lost, failed: res.failures, writesPerSec };
}

function markdownTable(rows: readonly DurabilityRow[]): string {
  const lines = ['| level | fault | acknowledged | lost | failed (unknown) | writes/s before the fault |', '|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.level} | ${r.fault} | ${r.acked} | ${r.lost} | ${r.failed} | ${r.writesPerSec} |`);
  return lines.join('\n');
}

function writeJson(baseDir: string, body: unknown): string {
  const dir = path.join(baseDir, 'experiments');
  makeDirs(dir, 'report directory');
  const file = path.join(dir, `durability-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(body, null, 2));
  return file;
}
