/**
 * The tserver console (port 9000, docs/architecture.md §Consoles, §Contracts): /tablets, /tablet?id=, /mem-trackers, each with its
 * JSON twin, plus per-tablet memtable gauges and read/write op counters on /metrics and
 * /prometheus-metrics (named like YugabyteDB's: mem_tracker_RegularDB_MemTable{tablet_id=…}). The kit
 * (rpc/web-server.ts) supplies /varz, POST /api/v1/flags, /healthz, /logs. The pages live in
 * tserver-web-tablets.ts, tserver-web-txns.ts and tserver-web-metrics.ts; the memory trackers in
 * tablet-mem-trackers.ts.
 */
import { link, raw } from '../rpc';
import { registerIoGauges, registerMemGauges, registerMemPage } from './tserver-web-metrics';
import { registerTabletPages } from './tserver-web-tablets';
import { registerTxnPages } from './tserver-web-txns';
import type { TServerWebDeps } from './tserver-web-deps';

export { sizesOf, TabletMemTrackers } from './tablet-mem-trackers';
export type { TabletDetail } from './tablet-detail';
export type { TServerWebDeps } from './tserver-web-deps';
export { countingServer } from './tserver-web-metrics';
export { parseReadHt } from './tserver-web-tablets';

export function registerTServerPages(d: TServerWebDeps): void {
  registerOverview(d);
  registerTabletPages(d);
  registerTxnPages(d);
  registerMemPage(d);
  registerMemGauges(d);
  registerIoGauges(d);
}

/** The console's front page: this server's tablets, intents and recent applies at a glance. */
function registerOverview(d: TServerWebDeps): void {
  const { web } = d;
  web.setOverview(async () => {
    const { tablets } = await d.tabletsJson();
    const leaders = tablets.filter((t) => t.role.toUpperCase() === 'LEADER').length;
    const notRunning = tablets.filter((t) => t.state !== 'RUNNING').length;
    const intents = tablets.reduce((n, t) => n + t.intentsdb.intentCount, 0);
    // Applies of committed transactions in the last minute, and the longest lag among them (a replica
    // applying late — TEST_inject_sleep_before_applying_intents_ms, a slow disk — shows here first).
    const since = Date.now() * 1000 - 60_000_000;
    let applies = 0;
    let maxLagMs = 0;
    for (const p of d.manager().list()) {
      for (const r of p.applyLag.since(since)) {
        applies++;
        maxLagMs = Math.max(maxLagMs, r.lagMs);
      }
    }
    const applies60s = { applies, maxLagMs: Math.round(maxLagMs * 10) / 10 };
    return [
      { key: 'uuid', label: 'Tablet server', value: d.uuid },
      { key: 'rpcAddress', label: 'RPC address', value: d.rpcAddress },
      { key: 'tablets', label: 'Tablet replicas', value: tablets.length, html: link('/tablets', String(tablets.length)) },
      { key: 'leaders', label: 'Of them leaders', value: leaders },
      { key: 'tabletsNotRunning', label: 'Replicas not RUNNING', value: notRunning, html: notRunning > 0 ? raw(`<b style="color:#b00">${notRunning}</b>`) : '0' },
      { key: 'intents', label: 'Provisional records (intents) held', value: intents, html: link('/transactions', String(intents)) },
      { key: 'applies60s', label: 'Transactions applied in the last 60 s (per tablet replica) / longest lag ms', value: applies60s, html: link('/txn-applies', `${applies} / ${applies60s.maxLagMs}`) },
    ];
  });
}
