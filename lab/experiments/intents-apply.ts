/**
 * intents-apply — the defining experiment (docs/architecture.md §The defining experiment):
 *  1. 3 nodes; n0 gets TEST_inject_sleep_before_applying_intents_ms = delay.
 *  2. table `demo (id int64 hash, value string)` in 3 tablets.
 *  3. one transaction inserts `rows` rows of `rowBytes` bytes and stays open: every replica of every
 *     tablet holds the provisional records in its IntentsDB (same intent count, equal digests of the
 *     records' keys and values, memtables alike).
 *  4. commit: n1 and n2 apply at once (IntentsDB empties, RegularDB grows); n0 still holds only
 *     intents — yet reads from the leaders already return every committed row.
 *  5. after the delay n0 applies too: every replica holds the same RegularDB contents (equal
 *     digests of keys, versions and values) and an empty IntentsDB.
 * Each phase's per-tablet, per-node figures are read from the tservers' JSON consoles, as a person
 * would read /tablets, and go into the report with a chart of memtable bytes over time.
 */
import type { NodeAddresses } from '../cluster-driver';
import { getJson } from '../console-http';
import { tserverTablets, type ReplicaRow } from '../tablet-view';
import { sleep, waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab } from './experiment-lab';
import type { ChartSeries } from './report';

export interface IntentsApplyParams {
  rows: number;
  rowBytes: number;
  delayMs: number;
}

export const INTENTS_APPLY_DEFAULTS: IntentsApplyParams = { rows: 100, rowBytes: 1024 * 1024, delayMs: 60_000 };

const TABLE = 'demo';
const DELAY_FLAG = 'TEST_inject_sleep_before_applying_intents_ms';
/** Rows per write RPC: keeps each Raft entry (and RPC frame) to a few MiB whatever the row size. */
const ROW_BYTES_PER_RPC = 4 * 1024 * 1024;
const SAMPLE_INTERVAL_MS = 250;
const SAMPLES_MAX = 20_000;

type Snapshot = Map<string, Map<string, ReplicaRow>>; // node -> tabletId -> row

async function snapshot(nodes: readonly NodeAddresses[]): Promise<Snapshot> {
  const s: Snapshot = new Map();
  await Promise.all(
    nodes.map(async (n) => {
      const rows = (await tserverTablets(n.tserver.webUrl)) ?? [];
      s.set(n.name, new Map(rows.filter((r) => r.table === TABLE).map((r) => [r.tabletId, r])));
    }),
  );
  return s;
}

function tabletIds(s: Snapshot): string[] {
  const ids = new Set<string>();
  for (const m of s.values()) for (const id of m.keys()) ids.add(id);
  return [...ids].sort();
}

/** One Markdown-ish table of a phase: per tablet and node, IntentsDB and RegularDB memtable bytes and intents. */
function phaseTable(phase: string, s: Snapshot): string[] {
  const out = [`phase: ${phase}`, '  tablet            node  role      intents  IntentsDB memtable  RegularDB memtable'];
  for (const id of tabletIds(s)) {
    for (const [node, m] of [...s.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const r = m.get(id);
      if (!r) continue;
      out.push(`  ${id.slice(0, 16).padEnd(16)}  ${node.padEnd(4)}  ${r.role.padEnd(8)}  ${String(r.intentsdb.intentCount).padStart(7)}  ${String(r.intentsdb.memtableBytes).padStart(18)}  ${String(r.regulardb.memtableBytes).padStart(18)}`);
    }
  }
  return out;
}

interface IntentsDigestAnswer {
  visible: { appliedIndex: number; intents?: { sha256: string; txns: number; records: number } };
}

/**
 * Per tablet, every replica's digest of the provisional records it holds (/tablet-checksum
 * visible.intents), asked until the replicas stand at one applied index with equal digests (30 s).
 */
async function sameIntentDigests(nodes: readonly NodeAddresses[], tablets: readonly string[]): Promise<{ same: boolean; detail: string }> {
  const parts: string[] = [];
  let same = true;
  for (const id of tablets) {
    let last = '';
    const ok = await waitUntil(
      async () => {
        const answers = await Promise.all(nodes.map(async (n) => ({ node: n.name, a: (await getJson(`${n.tserver.webUrl}/api/v1/tablet-checksum?id=${id}&read_ht=now`, 30_000).catch(() => undefined)) as IntentsDigestAnswer | undefined })));
        last = answers.map((x) => `${x.node} ${x.a?.visible.intents ? `${x.a.visible.intents.records} records ${x.a.visible.intents.sha256.slice(0, 12)}` : 'no answer'} @${x.a?.visible.appliedIndex ?? '?'}`).join(', ');
        const first = answers[0]?.a?.visible;
        return first?.intents && first.intents.txns > 0 && answers.every((x) => x.a?.visible.appliedIndex === first.appliedIndex && x.a.visible.intents?.sha256 === first.intents!.sha256) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: `equal provisional-record digests on the replicas of ${id}` },
    ).catch(() => false);
    if (!ok) same = false;
    parts.push(`${id.slice(0, 8)}: ${last}`);
  }
  return { same, detail: `provisional-record digests (keys and values) ${same ? 'equal' : 'DIFFER'}: ${parts.join('; ')}` };
}

function rowValue(i: number, bytes: number): string {
  return `${i}:`.padEnd(bytes, String.fromCharCode(97 + (i % 26)));
}

export function intentsApply(params: Partial<IntentsApplyParams> = {}) {
  const p: IntentsApplyParams = { ...INTENTS_APPLY_DEFAULTS, ...params };
  return async (o: ExperimentOptions): Promise<ExperimentResult> => {
    // One memtable size on every replica (whatever the default): the check that the replicas' memtables
    // are alike compares bytes, which a spread of sizes makes differ by RocksDB's arena blocks.
    const lab = await openExperimentLab(o, 'intents-apply', { memstore_size_spread_pct: '0' });
    const checks: Check[] = [];
    const figures: Record<string, number | string> = { rows: p.rows, rowBytes: p.rowBytes, delayMs: p.delayMs };
    const check = (name: string, ok: boolean, detail: string): void => {
      checks.push({ name, ok, detail });
      lab.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
    };
    const series = new Map<string, Array<[number, number]>>();
    let sampler: NodeJS.Timeout | undefined;
    try {
      const nodes = lab.driver.addresses();
      const c = lab.client;
      await c.createTable({ name: TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
      await waitUntil(async () => {
        const s = await snapshot(nodes);
        return [...s.values()].every((m) => m.size === 3 && [...m.values()].some((r) => r.role.toUpperCase() === 'LEADER' || r.role.toUpperCase() === 'FOLLOWER'));
      }, { timeoutMs: 60_000, intervalMs: 200, what: `every node hosting 3 replicas of ${TABLE}` });
      await lab.driver.setFlag('n0', DELAY_FLAG, String(p.delayMs), true);
      lab.log(`table ${TABLE} in 3 tablets; ${DELAY_FLAG}=${p.delayMs} on n0`);

      let sampling = false;
      sampler = setInterval(() => {
        if (sampling) return;
        sampling = true;
        void snapshot(nodes)
          .then((s) => {
            const at = lab.now();
            for (const [node, m] of s) {
              const rows = [...m.values()];
              for (const [db, bytes] of [['IntentsDB', rows.reduce((a, r) => a + r.intentsdb.memtableBytes, 0)], ['RegularDB', rows.reduce((a, r) => a + r.regulardb.memtableBytes, 0)]] as const) {
                const pts = series.get(`${node} ${db}`) ?? [];
                if (pts.length < SAMPLES_MAX) pts.push([at, bytes]);
                series.set(`${node} ${db}`, pts);
              }
            }
          })
          .finally(() => (sampling = false));
      }, SAMPLE_INTERVAL_MS);

      lab.timeline.push(...phaseTable('before insert', await snapshot(nodes)));

      // Phase: open transaction.
      const txn = await c.beginTransaction({ isolation: 'snapshot', timeoutMs: 120_000 });
      const insertAt = lab.now();
      const BATCH = Math.max(1, Math.floor(ROW_BYTES_PER_RPC / Math.max(1, p.rowBytes)));
      for (let i = 0; i < p.rows; i += BATCH * 3) {
        const chunk = Array.from({ length: Math.min(BATCH * 3, p.rows - i) }, (_, j) => ({ id: BigInt(i + j), value: rowValue(i + j, p.rowBytes) }));
        await txn.table(TABLE).upsertMany(chunk, { timeoutMs: 120_000, rowsPerRpc: BATCH });
        o.progress(`  inserted ${Math.min(p.rows, i + BATCH * 3)}/${p.rows} rows`);
      }
      figures['insertMs'] = Math.round(lab.now() - insertAt);
      lab.log(`transaction open: ${p.rows} rows of ${p.rowBytes} bytes written as intents in ${figures['insertMs']} ms`);
      const open = await waitUntil(async () => {
        const s = await snapshot(nodes);
        for (const id of tabletIds(s)) {
          const counts = [...s.values()].map((m) => m.get(id)?.intentsdb.intentCount ?? -1);
          if (!(counts[0]! > 0) || counts.some((n) => n !== counts[0])) return undefined;
        }
        return s;
      }, { timeoutMs: 30_000, intervalMs: 200, what: 'equal intent counts on every replica' }).catch(() => undefined);
      const openSnap = open ?? (await snapshot(nodes));
      lab.timeline.push(...phaseTable('open transaction', openSnap));
      // The same records, not only as many: each replica's digest of its provisional records (keys and values).
      const openDigests = open ? await sameIntentDigests(nodes, tabletIds(openSnap)) : undefined;
      check(
        'while open, every replica of every tablet holds the same provisional records',
        open !== undefined && openDigests?.same === true,
        !open ? 'intent counts differ or are zero' : `${tabletIds(openSnap).length} tablets, equal intent counts on all 3 replicas; ${openDigests!.detail}`,
      );
      const spread = tabletIds(openSnap).map((id) => {
        const b = [...openSnap.values()].map((m) => m.get(id)?.intentsdb.memtableBytes ?? 0);
        return (Math.max(...b) - Math.min(...b)) / Math.max(1, Math.max(...b));
      });
      check('while open, IntentsDB memtable bytes are alike on the 3 replicas', spread.every((x) => x < 0.05), `largest spread ${(Math.max(...spread) * 100).toFixed(1)}% per tablet`);
      const invisible = await c.table(TABLE).scan({ timeoutMs: 60_000, pageSize: BATCH, columns: ['id'] });
      check('while open, nothing is visible outside the transaction', invisible.length === 0, `${invisible.length} rows visible`);

      // Phase: commit.
      const commitStart = lab.now();
      const commitWallMicros = Date.now() * 1000;
      await txn.commit({ timeoutMs: 120_000 });
      const committedAt = lab.now();
      figures['commitMs'] = Math.round(committedAt - commitStart);
      lab.log(`committed in ${figures['commitMs']} ms`);
      const othersApplied = await waitUntil(async () => {
        const s = await snapshot(nodes);
        return ['n1', 'n2'].every((n) => [...(s.get(n)?.values() ?? [])].every((r) => r.intentsdb.intentCount === 0)) ? s : undefined;
      }, { timeoutMs: Math.max(1_000, Math.min(30_000, p.delayMs - 1_000)), intervalMs: 100, what: 'n1 and n2 to apply' }).catch(() => undefined);
      const during = othersApplied ?? (await snapshot(nodes));
      const beforeDelayEnds = lab.now() - committedAt < p.delayMs;
      lab.timeline.push(...phaseTable('just after commit', during));
      check('after commit, n1 and n2 applied at once (IntentsDB empty)', othersApplied !== undefined, othersApplied ? `${Math.round(lab.now() - committedAt)} ms after commit` : 'still holding intents');
      const n0Intents = tabletIds(during).every((id) => (during.get('n0')?.get(id)?.intentsdb.intentCount ?? 0) === (openSnap.get('n0')?.get(id)?.intentsdb.intentCount ?? -1));
      check('after commit, n0 still holds only intents (its apply is delayed)', n0Intents && beforeDelayEnds, n0Intents ? 'n0 intent counts unchanged since the open phase' : 'n0 intent counts changed');
      // Memtable plus SST bytes: large values may already have been flushed out of the memtable.
      const regularBytes = (n: string, id: string): number => {
        const r = during.get(n)?.get(id);
        return r ? r.regulardb.memtableBytes + r.regulardb.sstBytes : 0;
      };
      const grew = tabletIds(during).every((id) => regularBytes('n1', id) > regularBytes('n0', id));
      check('after commit, RegularDB grew on n1 but not yet on n0', grew, tabletIds(during).map((id) => `${id.slice(0, 8)}: n1 ${regularBytes('n1', id)} B vs n0 ${regularBytes('n0', id)} B`).join('; '));
      // Then read everything back at the leaders — n0 leads one tablet and holds only its intents. The
      // read counts only if it ended before n0's delay did (n0 cannot have applied before then).
      const rows = await c.table(TABLE).scan({ timeoutMs: 120_000, pageSize: BATCH });
      const complete = rows.length === p.rows && rows.every((r) => r['value'] === rowValue(Number(r['id']), p.rowBytes));
      const readDoneMs = Math.round(lab.now() - committedAt);
      figures['readAfterCommitMs'] = readDoneMs;
      const whileN0Waits = readDoneMs < p.delayMs;
      check(
        'right after commit, reads at the leaders return every committed row while n0 holds only intents',
        complete && whileN0Waits,
        `${rows.length}/${p.rows} rows read back intact, done ${readDoneMs} ms after commit` +
          (whileN0Waits ? ` (before n0's ${p.delayMs} ms delay ended)` : `, after n0's ${p.delayMs} ms delay ended: give a longer --delay-ms`),
      );

      // Phase: after the delay.
      const all = await waitUntil(async () => {
        const s = await snapshot(nodes);
        return [...s.values()].every((m) => [...m.values()].every((r) => r.intentsdb.intentCount === 0)) ? s : undefined;
      }, { timeoutMs: p.delayMs + 60_000, intervalMs: 250, what: 'every replica to apply' }).catch(() => undefined);
      const appliedAllMs = lab.now() - committedAt;
      figures['n0ApplyAfterCommitMs'] = Math.round(appliedAllMs);
      lab.timeline.push(...phaseTable('after the delay', all ?? (await snapshot(nodes))));
      check('after the delay, n0 applied too (every IntentsDB empty)', all !== undefined && appliedAllMs >= p.delayMs - 500, all ? `${Math.round(appliedAllMs)} ms after commit (delay ${p.delayMs} ms)` : 'intents remain');
      // Each replica's own record of its applies (the console's Applies page, /api/v1/txn-applies):
      // lag = commit time → that replica's intents in RegularDB.
      const lags = await Promise.all(
        nodes.map(async (n) => {
          const body = (await getJson(`${n.tserver.webUrl}/api/v1/txn-applies?since=${Math.floor(commitWallMicros - 1_000_000)}`)) as { applies: Array<{ tabletId: string; txnId: string; lagMs: number }> };
          const mine = body.applies.filter((a) => a.txnId === txn.txnId);
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
        tabletIds(all ?? during).map(async (id) => {
          const d = await Promise.all(nodes.map(async (n) => ((await getJson(`${n.tserver.webUrl}/api/v1/tablet-checksum?id=${id}`, 60_000)) as { regulardb: { sha256: string; entries: number } }).regulardb));
          return { id, same: d.every((x) => x.sha256 === d[0]!.sha256 && x.entries > 0), entries: d[0]!.entries };
        }),
      );
      check('after the delay, all replicas hold the same RegularDB contents', digests.length === 3 && digests.every((x) => x.same), digests.map((x) => `${x.id.slice(0, 8)}: ${x.same ? 'equal' : 'DIFFERENT'} (${x.entries} entries)`).join('; '));
      await sleep(2 * SAMPLE_INTERVAL_MS); // one more chart sample after the last apply
      return {
        name: 'intents-apply',
        title: 'Intents applied independently by each replica',
        summary: `3 nodes (${lab.driver.kind} driver), ${DELAY_FLAG}=${p.delayMs} on n0; one transaction wrote ${p.rows} rows of ${p.rowBytes} bytes into table ${TABLE} (3 tablets, RF 3), was left open, then committed.`,
        checks,
        figures,
        chart: { title: 'Memtable bytes per node and database (table demo)', series: chartSeries(series), yLabel: 'bytes' },
        timeline: lab.timeline,
      };
    } finally {
      if (sampler) clearInterval(sampler);
      await lab.close();
    }
  };
}

function chartSeries(series: Map<string, Array<[number, number]>>): ChartSeries[] {
  return [...series.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, points]) => ({ name, points }));
}
