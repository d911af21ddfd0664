/**
 * hbase-versions: HBase's cell model on a real 3-node lab (docs/cells.md). A table whose family cf1
 * has VERSIONS=3, MIN_VERSIONS=1, TTL=10 s and KEEP_DELETED_CELLS=true gets five timestamped versions
 * of one cell, then a column delete. Raw, as-of and time-range reads are checked cell by cell before a
 * forced compaction (history_gc_interval_sec turned on at run time, with a 1 s history retention),
 * after it (the two oldest versions gone — beyond VERSIONS — the delete marker and the three newest
 * kept, as KEEP_DELETED_CELLS asks; the as-of snapshot now below the history floor), and after the
 * TTL (only the MIN_VERSIONS newest version left, in reads and, after the next compaction, on disk).
 */
import { DbError } from '../../common/errors';
import { parseFamilySpec } from '../../common/column-families';
import type { CellReadOptions } from '../../client/cells';
import type { NodeName } from '../cluster-spec';
import { sleep, waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab, type ExperimentLab } from './experiment-lab';

const TABLE = 'hv';
const FAMILY = 'cf1:VERSIONS=3,MIN_VERSIONS=1,TTL=10,KEEP_DELETED_CELLS=true';
const TTL_MS = 10_000;
const NODES: readonly NodeName[] = ['n0', 'n1', 'n2'];

interface GcView {
  node: NodeName;
  runs: number;
  historyFloorHt: bigint;
}

async function gcViews(lab: ExperimentLab): Promise<GcView[]> {
  const out: GcView[] = [];
  for (const node of NODES) {
    const list = (await lab.driver.consoleJson(node, 'tserver', '/api/v1/tablets', 5_000)) as { tablets: Array<{ tabletId: string; table: string }> };
    for (const t of list.tablets.filter((x) => x.table === TABLE)) {
      const d = (await lab.driver.consoleJson(node, 'tserver', `/api/v1/tablet?id=${encodeURIComponent(t.tabletId)}`, 5_000)) as { historyGc: { runs: number; historyFloorHt: string } };
      out.push({ node, runs: d.historyGc.runs, historyFloorHt: BigInt(d.historyGc.historyFloorHt) });
    }
  }
  return out;
}

/** Wait until every replica compacted with a history floor above `above` (the GC runs every second once on). */
async function compacted(lab: ExperimentLab, above: bigint, what: string): Promise<GcView[]> {
  let views: GcView[] = [];
  await waitUntil(
    async () => {
      views = await gcViews(lab);
      return views.length === 3 && views.every((v) => v.historyFloorHt > above);
    },
    { timeoutMs: 60_000, intervalMs: 500, what },
  );
  return views;
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function hbaseVersions(o: ExperimentOptions): Promise<ExperimentResult> {
  // GC off until the forced compaction; a 1 s retention so it may collect right after.
  const lab = await openExperimentLab(o, 'hbase-versions', { timestamp_history_retention_interval_sec: '1', history_gc_interval_sec: '0', history_gc_min_new_versions_pct: '0' });
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const expect = (name: string, got: string[], want: string[]): void => {
    checks.push({ name, ok: JSON.stringify(got) === JSON.stringify(want), detail: `got [${got.join(', ')}], expected [${want.join(', ')}]` });
    lab.log(`${JSON.stringify(got) === JSON.stringify(want) ? 'ok  ' : 'FAIL'} ${name}: [${got.join(', ')}]`);
  };
  try {
    await lab.client.createTable({ name: TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string', family: 'cf1' }], primaryKey: { hash: ['id'] }, numTablets: 1, families: [parseFamilySpec(FAMILY)] });
    lab.log(`table ${TABLE} created: family ${FAMILY}`);
    const t = lab.client.table(TABLE);
    const key = { id: 1n };
    // Five versions one second apart, the newest a second ago (their TTL counts from these times).
    const base = Date.now() - 6_000;
    const ts = [1, 2, 3, 4, 5].map((i) => base + i * 1000);
    for (let i = 0; i < 5; i++) await t.putCells(key, [{ column: 'v', value: `v${i + 1}`, timestamp: ts[i]! }]);
    const deleteHt = await t.deleteCells(key, [{ type: 'column', column: 'v' }]);
    lab.log(`five versions v1..v5 put at ${ts.map((x) => new Date(x).toISOString().slice(11, 23)).join(', ')}; column v deleted at ${deleteHt}`);

    const read = async (o: CellReadOptions): Promise<string[]> => {
      const r = await t.getCells(key, o);
      return (r?.cells ?? []).map((c) => (c.type === 'PUT' ? String(c.value) : c.type));
    };
    const readCode = (o: CellReadOptions): Promise<string[]> => read(o).catch((e: unknown) => [e instanceof DbError ? e.code : String(e)]);
    const range: [bigint | number, bigint | number] = [ts[0]!, deleteHt];

    expect('before compaction: a get reads nothing (the column delete masks every version)', await read({ versions: 5 }), []);
    expect('before compaction: raw shows the delete marker and all five versions', await read({ raw: true }), ['DELETE_COLUMN', 'v5', 'v4', 'v3', 'v2', 'v1']);
    expect('before compaction: a time range ending before the delete sees the three newest (KEEP_DELETED_CELLS, VERSIONS=3)', await read({ versions: 5, timeRange: range }), ['v5', 'v4', 'v3']);
    expect('before compaction: as of v4\'s time, the three newest then (v4, v3, v2)', await read({ versions: 5, asOf: ts[3]! }), ['v4', 'v3', 'v2']);

    // Forced compaction: history GC on, every replica passes the delete.
    for (const n of NODES) await lab.driver.setFlag(n, 'history_gc_interval_sec', '1', false, 'tserver');
    const t0 = performance.now();
    const views = await compacted(lab, deleteHt, 'every replica compacted past the delete');
    figures['compactionMs'] = Math.round(performance.now() - t0);
    lab.log(`compacted on every replica in ${figures['compactionMs']} ms (floors ${views.map((v) => `${v.node} ${v.historyFloorHt}`).join(', ')})`);
    expect('after compaction: raw keeps the delete marker and the three newest versions; v1, v2 (beyond VERSIONS) are gone', await read({ raw: true }), ['DELETE_COLUMN', 'v5', 'v4', 'v3']);
    expect('after compaction: the time range before the delete still sees v5, v4, v3', await read({ versions: 5, timeRange: range }), ['v5', 'v4', 'v3']);
    expect('after compaction: a get still reads nothing', await read({ versions: 5 }), []);
    expect('after compaction: the as-of read below the history floor is refused', await readCode({ versions: 5, asOf: ts[3]! }), ['SNAPSHOT_TOO_OLD']);
    const rewrite = await t.putCells(key, [{ column: 'v', value: 'rewritten', timestamp: ts[0]! }]).then(
      () => 'written',
      (e: unknown) => (e instanceof DbError ? e.code : String(e)),
    );
    expect('after compaction: a put at v1\'s timestamp (below the history floor, where retention was applied) is refused', [rewrite], ['INVALID_ARGUMENT']);

    // After the TTL of v5 (10 s from its timestamp): only MIN_VERSIONS=1 version is kept.
    const ttlEnd = ts[4]! + TTL_MS;
    while (Date.now() <= ttlEnd) await sleep(Math.min(1000, ttlEnd - Date.now() + 1));
    expect('after the TTL: the time range read returns only the newest version (MIN_VERSIONS=1 outlives the TTL)', await read({ versions: 5, timeRange: range }), ['v5']);
    // A write elsewhere in the tablet, so the next compaction pass has something new to look at.
    const poke = await t.putCells({ id: 2n }, [{ column: 'v', value: 'after the TTL' }]);
    await compacted(lab, poke, 'every replica compacted after the TTL');
    expect('after the TTL and a compaction: raw keeps the delete marker and v5 only', await read({ raw: true }), ['DELETE_COLUMN', 'v5']);
    expect('after the TTL and a compaction: the time range read still returns v5', await read({ versions: 5, timeRange: range }), ['v5']);

    figures['checks'] = checks.length;
    figures['passed'] = checks.filter((c) => c.ok).length;
    return {
      name: 'hbase-versions',
      title: "HBase's cell model: VERSIONS, MIN_VERSIONS, TTL and KEEP_DELETED_CELLS through compactions",
      summary: `A 3-node ${lab.driver.kind} lab (RF 3). Table ${TABLE}, one tablet, family ${FAMILY}. Five versions of one cell at client timestamps one second apart, then a column delete. Raw, as-of and time-range reads before a forced compaction (history_gc_interval_sec turned on at run time, retention 1 s), after it, and after the 10 s TTL with another compaction.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
