/**
 * tablet-split (docs/splitting.md): automatic splitting by size under a write load. A range table
 * starts as one tablet; the master's split flags are set small (enable_automatic_tablet_splitting,
 * a low-phase threshold of a few hundred KiB); writers upsert random keys across the key space, so
 * every tablet grows and splits in turn. The table must grow from 1 to at least 8 tablets while the
 * load runs, no write may fail (clients meet TABLET_SPLIT and are re-routed underneath), no
 * acknowledged write may be lost, and the replicas of every tablet must converge. The report shows
 * tablets and writes over time.
 */
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { tabletServerMethods } from '../../rpc';
import { labConnectOptions } from '../cluster-driver';
import { checkReplicaConvergence, convergenceLine } from '../verify/replica-convergence';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { openExperimentLab } from './experiment-lab';

const TABLE = 'ranged';
const WRITERS = 6;
/** Tablets the table must reach. */
const TABLETS_WANTED = 8;
/** The load stops this long after the table reached TABLETS_WANTED (writes across the last splits). */
const AFTER_TARGET_MS = 3_000;
/** The load never runs longer than this. */
const LOAD_MS_MAX = 120_000;
const WRITES_PER_WRITER_MAX = 200_000;
const VALUE_BYTES = 256;
const KEY_SPACE = 1_000_000_000;
const SAMPLE_MS = 500;

function masterFlags(thresholdBytes: number): Record<string, string> {
  return {
    enable_automatic_tablet_splitting: 'true',
    tablet_split_low_phase_size_threshold_bytes: String(thresholdBytes),
    tablet_split_size_threshold_bytes: String(thresholdBytes * 4),
    outstanding_tablet_split_limit: '1',
  };
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export function tabletSplit(params: Record<string, number> = {}): (o: ExperimentOptions) => Promise<ExperimentResult> {
  const thresholdBytes = params['thresholdBytes'] ?? 256 * 1024;
  return async (o) => {
    const lab = await openExperimentLab(o, 'tablet-split');
    const checks: Check[] = [];
    const figures: Record<string, number | string> = {};
    const masters = lab.driver.addresses().filter((n) => n.master).map((n) => n.master!.rpcAddress);
    const writerClient = await TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: 30_000 });
    try {
      await lab.client.createTable({ name: TABLE, columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { range: ['k'] } });
      for (const [name, value] of Object.entries(masterFlags(thresholdBytes))) {
        for (const m of masters) await lab.client.rpcClient().call(m, tabletServerMethods().setFlag, { name, value, force: false }, { timeoutMs: 5_000 });
      }
      lab.log(`range table ${TABLE} created (1 tablet); master flags: ${JSON.stringify(masterFlags(thresholdBytes))}`);
      const acked = new Set<bigint>();
      const failures: Record<string, number> = {};
      let stop = false;
      const t = writerClient.table(TABLE);
      const value = 'x'.repeat(VALUE_BYTES);
      const writer = async (w: number): Promise<void> => {
        let seed = 7919 * (w + 1);
        for (let i = 0; i < WRITES_PER_WRITER_MAX && !stop; i++) {
          seed = (seed * 1103515245 + 12345) % 2147483648;
          const k = BigInt(seed % KEY_SPACE);
          try {
            await t.upsert({ k, v: value });
            acked.add(k);
          } catch (e) {
            const code = e instanceof DbError ? e.code : 'ERROR';
            failures[code] = (failures[code] ?? 0) + 1;
          }
        }
      };
      const start = lab.now();
      const load = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      const tabletsSeries: Array<[number, number]> = [];
      const rateSeries: Array<[number, number]> = [];
      let reachedAt: number | undefined;
      let lastAcked = 0;
      let lastTablets = 1;
      while (!stop) {
        await new Promise((r) => setTimeout(r, SAMPLE_MS));
        const at = lab.now() - start;
        const n = (await lab.client.tableLocations(TABLE).catch(() => undefined))?.tablets.length ?? lastTablets;
        tabletsSeries.push([at, n]);
        rateSeries.push([at, ((acked.size - lastAcked) * 1000) / SAMPLE_MS]);
        lastAcked = acked.size;
        if (n !== lastTablets) lab.log(`${n} tablets (${acked.size} writes acknowledged)`);
        lastTablets = n;
        if (n >= TABLETS_WANTED && reachedAt === undefined) reachedAt = at;
        if ((reachedAt !== undefined && at - reachedAt >= AFTER_TARGET_MS) || at >= LOAD_MS_MAX) stop = true;
      }
      await load;
      const loadMs = lab.now() - start;
      lab.log(`load stopped after ${loadMs.toFixed(0)} ms: ${acked.size} distinct keys acknowledged, failures ${JSON.stringify(failures)}`);
      const rows = await lab.client.table(TABLE).scan({ timeoutMs: 60_000, columns: [] });
      const present = new Set(rows.map((r) => r['k'] as bigint));
      const lost = [...acked].filter((k) => !present.has(k));
      const sorted = rows.every((r, i) => i === 0 || (rows[i - 1]!['k'] as bigint) < (r['k'] as bigint));
      const tablets = (await lab.client.tableLocations(TABLE)).tablets;
      const tservers = lab.driver.addresses().map((n) => ({ name: n.name, webUrl: n.tserver.webUrl }));
      const conv = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 60_000, tablets: new Set(tablets.map((x) => x.tabletId)) });
      lab.log(convergenceLine(conv));
      const failed = Object.values(failures).reduce((s, n) => s + n, 0);
      checks.push({ name: `the table grew from 1 to at least ${TABLETS_WANTED} tablets while the load ran (automatic splits by size)`, ok: reachedAt !== undefined && tabletsSeries[0]![1] <= 2, detail: `${tabletsSeries[0]![1]} tablet(s) at the first sample, ${TABLETS_WANTED} after ${reachedAt?.toFixed(0) ?? '—'} ms, ${tablets.length} at the end` });
      checks.push({ name: 'no write failed: clients met TABLET_SPLIT underneath and were re-routed', ok: failed === 0 && acked.size > 0, detail: `${acked.size} keys acknowledged; failures ${JSON.stringify(failures)}` });
      checks.push({ name: 'no acknowledged write lost; a scan across all tablets returns the rows in key order', ok: lost.length === 0 && sorted, detail: `${present.size} rows scanned, ${lost.length} acknowledged keys missing, key order ${sorted ? 'kept' : 'BROKEN'}` });
      checks.push({ name: 'the replicas of every tablet converge', ok: conv.diverged.length === 0 && conv.converged === tablets.length, detail: convergenceLine(conv) });
      figures['tabletsAtEnd'] = tablets.length;
      figures['msToTabletsWanted'] = reachedAt === undefined ? '—' : Math.round(reachedAt);
      figures['writesAcknowledged'] = acked.size;
      figures['writesFailed'] = failed;
      figures['writesPerSec'] = Math.round((acked.size * 1000) / loadMs);
      figures['thresholdBytes'] = thresholdBytes;
      return {
        name: 'tablet-split',
        title: 'Automatic tablet splitting under a write load',
        summary: `A 3-node ${lab.driver.kind} lab (RF 3); a range table starts as one tablet with enable_automatic_tablet_splitting and a ${thresholdBytes}-byte low-phase threshold; ${WRITERS} writers upsert random keys (${VALUE_BYTES}-byte values) until the table has ${TABLETS_WANTED} tablets (plus ${AFTER_TARGET_MS / 1000} s).`,
        checks,
        figures,
        charts: [
          { title: 'Tablets of the table over time', series: [{ name: 'tablets', points: tabletsSeries }], yUnit: 'tablets' },
          { title: 'Acknowledged writes per second', series: [{ name: 'writes/s', points: rateSeries }], yUnit: 'writes/s' },
        ],
        timeline: lab.timeline,
      };
    } finally {
      await writerClient.close().catch(() => undefined);
      await lab.close();
    }
  };
}
