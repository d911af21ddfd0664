/**
 * mvcc-history: what RegularDB keeps of old versions, and when it lets them go. The lab runs with a
 * short history retention (timestamp_history_retention_interval_sec=5) and history GC every second.
 * Rows are written, then a reader transaction takes its snapshot and a writer transaction writes
 * intents on one tablet; the rows are overwritten and some deleted. The reader sees its snapshot (old
 * versions are still there); once the retention passed, every replica collects the old versions on
 * its own, its history floor passes the reader's snapshot and the reader's next read fails
 * SNAPSHOT_TOO_OLD instead of returning data with versions missing — while the tablet holding the
 * writer's intents keeps its floor at or below the writer's start, so the writer still commits. A
 * dropped column's values are collected too. The latest data is unchanged throughout.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { NodeName } from '../cluster-spec';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab, type ExperimentLab } from './experiment-lab';

const ROWS = 30;
const DELETED = 5;
const RETENTION_SEC = 5;
const NODES: readonly NodeName[] = ['n0', 'n1', 'n2'];

interface GcView {
  node: NodeName;
  tabletId: string;
  runs: number;
  versionsDropped: number;
  droppedColumnVersions: number;
  historyFloorHt: bigint;
  intents: number;
}

/** History GC figures of every replica of the experiment table's tablets (tablet pages of each tserver). */
async function gcViews(lab: ExperimentLab): Promise<GcView[]> {
  const out: GcView[] = [];
  for (const node of NODES) {
    const list = (await lab.driver.consoleJson(node, 'tserver', '/api/v1/tablets', 5_000)) as { tablets: Array<{ tabletId: string; table: string }> };
    for (const t of list.tablets.filter((x) => x.table === EXPERIMENT_TABLE)) {
      const d = (await lab.driver.consoleJson(node, 'tserver', `/api/v1/tablet?id=${encodeURIComponent(t.tabletId)}`, 5_000)) as {
        historyGc: { runs: number; versionsDropped: number; droppedColumnVersions: number; historyFloorHt: string };
        intentsdb: { intentCount: number };
      };
      out.push({ node, tabletId: t.tabletId, runs: d.historyGc.runs, versionsDropped: d.historyGc.versionsDropped, droppedColumnVersions: d.historyGc.droppedColumnVersions, historyFloorHt: BigInt(d.historyGc.historyFloorHt), intents: d.intentsdb.intentCount });
    }
  }
  return out;
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function mvccHistory(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'mvcc-history', { timestamp_history_retention_interval_sec: String(RETENTION_SEC), history_gc_interval_sec: '1' });
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    const t = lab.client.table(EXPERIMENT_TABLE);
    await t.upsertMany(Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i), v: `old ${i}` })));
    lab.log(`${ROWS} rows written (v = 'old i')`);
    const reader = await lab.client.beginTransaction();
    const writer = await lab.client.beginTransaction();
    await writer.table(EXPERIMENT_TABLE).upsert({ id: 1000n, v: 'written by a transaction open across the GC' });
    // The reader's first read fixes its snapshot; the overwrites come after the clock-skew bound
    // (max_clock_skew_usec, 500 ms), so its later reads meet them outside the uncertainty window.
    await reader.table(EXPERIMENT_TABLE).get({ id: 0n });
    lab.log(`reader transaction (snapshot at ${reader.readHt}) and writer transaction (start ${writer.readHt}, intents on one tablet for row 1000) begun`);
    await new Promise((r) => setTimeout(r, 700));
    await t.upsertMany(Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i), v: `new ${i}` })));
    for (let i = 0; i < DELETED; i++) await t.delete({ id: BigInt(i) });
    // A hybrid time after the overwrites (a fresh transaction's start): once a floor passes it, the
    // overwritten versions and the deleted rows are collectable there.
    const probe = await lab.client.beginTransaction();
    const afterWrites = probe.readHt;
    await probe.abort().catch(() => undefined);
    lab.log(`rows overwritten (v = 'new i'), rows 0..${DELETED - 1} deleted (done before ${afterWrites})`);

    // The reader's snapshot: the old versions, deleted rows included.
    const snap = await Promise.all(Array.from({ length: ROWS }, (_, i) => reader.table(EXPERIMENT_TABLE).get({ id: BigInt(i) })));
    const snapOk = snap.every((r, i) => r?.['v'] === `old ${i}`);
    checks.push({ name: 'a snapshot taken before the overwrites reads the old versions (deleted rows included): RegularDB keeps them', ok: snapOk, detail: `${snap.filter((r, i) => r?.['v'] === `old ${i}`).length} of ${ROWS} rows read as before the overwrites` });
    lab.log(`reader's snapshot: ${snapOk ? 'every row as it was' : 'NOT as it was'}`);

    // A column added, written, then dropped: its values become garbage whatever their time.
    await lab.client.alterTable(EXPERIMENT_TABLE, { addColumns: [{ name: 'note', type: 'string' }] }, { timeoutMs: 30_000 });
    await t.upsertMany(Array.from({ length: ROWS - DELETED }, (_, i) => ({ id: BigInt(i + DELETED), v: `new ${i + DELETED}`, note: 'soon dropped' })));
    await lab.client.alterTable(EXPERIMENT_TABLE, { dropColumns: ['note'] }, { timeoutMs: 30_000 });
    lab.log(`column note added, written on ${ROWS - DELETED} rows, dropped`);

    const t0 = performance.now();
    let views: GcView[] = [];
    await waitUntil(
      async () => {
        views = await gcViews(lab);
        // Every replica collected, past the reader's snapshot on the tablets without the writer's intents.
        return views.length === 9 && views.every((v) => v.droppedColumnVersions > 0 && (v.intents > 0 || v.historyFloorHt > afterWrites));
      },
      { timeoutMs: 60_000, intervalMs: 500, what: "every replica's history GC past the reader's snapshot" },
    ).catch(() => undefined);
    const gcMs = performance.now() - t0;
    const sum = (n: NodeName, f: (v: GcView) => number): number => views.filter((v) => v.node === n).reduce((s, v) => s + f(v), 0);
    const byNode = NODES.map((n) => `${n}: ${sum(n, (v) => v.versionsDropped)} versions dropped (${sum(n, (v) => v.droppedColumnVersions)} of the dropped column)`).join('; ');
    lab.log(`history GC on every replica after ${gcMs.toFixed(0)} ms: ${byNode}`);
    checks.push({
      name: `every replica collected old versions on its own once they were older than the retention (${RETENTION_SEC} s), the dropped column's values included`,
      ok: views.length === 9 && views.every((v) => v.droppedColumnVersions > 0) && NODES.every((n) => sum(n, (v) => v.versionsDropped - v.droppedColumnVersions) > 0),
      detail: byNode,
    });
    const held = views.filter((v) => v.intents > 0);
    checks.push({
      name: "the tablet holding the open writer's intents kept its history floor at or below the writer's start on every replica (GC never collects what an unapplied transaction may need)",
      ok: held.length === 3 && held.every((v) => v.historyFloorHt <= writer.readHt),
      detail: `${held.length} replicas with intents; floors ${held.map((v) => `${v.node} ${v.historyFloorHt}`).join(', ')}; writer start ${writer.readHt}`,
    });

    // The reader's snapshot is now below the floor of the tablets without intents: refused, not wrong.
    const codes: Record<string, number> = {};
    let wrong = 0;
    for (let i = 0; i < ROWS; i++) {
      try {
        const r = await reader.table(EXPERIMENT_TABLE).get({ id: BigInt(i) });
        if (r?.['v'] !== `old ${i}`) wrong++;
        codes['ok'] = (codes['ok'] ?? 0) + 1;
      } catch (e) {
        const code = e instanceof DbError ? e.code : 'ERROR';
        codes[code] = (codes[code] ?? 0) + 1;
        if (code !== ErrorCode.SNAPSHOT_TOO_OLD) break; // the transaction ended otherwise
      }
    }
    lab.log(`reader's reads after the GC: ${JSON.stringify(codes)}`);
    checks.push({
      name: 'a read at a snapshot below the history floor fails SNAPSHOT_TOO_OLD (clear error) instead of returning rows with versions missing',
      ok: (codes[ErrorCode.SNAPSHOT_TOO_OLD] ?? 0) > 0 && wrong === 0,
      detail: `${JSON.stringify(codes)}; ${wrong} reads returned something other than the snapshot`,
    });
    await reader.abort().catch(() => undefined);

    const commit = await writer.commit().then(
      (r) => `committed at ${r.commitHt}`,
      (e: unknown) => `failed: ${e instanceof DbError ? e.code : String(e)}`,
    );
    const now = await t.scan({ timeoutMs: 30_000 });
    const latestOk = now.length === ROWS - DELETED + (commit.startsWith('committed') ? 1 : 0) && now.every((r) => r['note'] === undefined && (r['id'] === 1000n || r['v'] === `new ${String(r['id'])}`));
    checks.push({ name: 'the writer transaction open across the GC commits', ok: commit.startsWith('committed'), detail: commit });
    checks.push({ name: 'the latest data is unchanged by the GC: overwritten rows read new, deleted rows stay deleted, no dropped column', ok: latestOk, detail: `${now.length} rows (${ROWS} written, ${DELETED} deleted, + row 1000 of the writer)` });

    figures['gcAfterMs'] = Math.round(gcMs);
    for (const n of NODES) figures[`${n}VersionsDropped`] = views.filter((v) => v.node === n).reduce((s, v) => s + v.versionsDropped, 0);
    figures['snapshotTooOld'] = codes[ErrorCode.SNAPSHOT_TOO_OLD] ?? 0;
    return {
      name: 'mvcc-history',
      title: 'MVCC history: kept for the retention interval, then collected by every replica',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets) with timestamp_history_retention_interval_sec=${RETENTION_SEC} and history_gc_interval_sec=1. ${ROWS} rows are written; a reader transaction takes its snapshot and a writer transaction writes one row; the rows are overwritten, ${DELETED} deleted, and a column is added, written and dropped. The reader reads its snapshot, the replicas collect, the reader reads again, the writer commits.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
