/**
 * The tserver console (port 9000, docs/architecture.md §Consoles, §Contracts): /tablets, /tablet?id=, /mem-trackers, each with its
 * JSON twin, plus per-tablet memtable gauges and read/write op counters on /metrics and
 * /prometheus-metrics (named like YugabyteDB's: mem_tracker_RegularDB_MemTable{tablet_id=…}). The kit
 * (rpc/web-server.ts) supplies /varz, POST /api/v1/flags, /healthz, /logs.
 *
 * Memory trackers keep the peak of every tablet's memtables in memory: the peak is the largest size
 * seen by any sample (every console read, every metrics scrape and a periodic sampler), so a spike
 * between two samples can be missed — the same best-effort a sampled gauge gives.
 */
import type { Gauge } from 'prom-client';
import type { BackgroundWork } from '../docdb';
import { DbError, ErrorCode } from '../common/errors';
import { LOGICAL_BITS, type HybridTime } from '../common/hybrid-time';
import { bytesCell, escapeHtml, htmlTable, link, raw, type Handler, type MemTrackerNode, type MethodDef, type Metrics, type RpcServer, type WebRequest, type WebServer } from '../rpc';
import type { TabletManager } from './tablet-manager';
import type { TabletPeer, WalSyncTimes } from './tablet/tablet-peer';
import { WAL_SLOW_SYNC_MS } from '../raft';
import { summarizeApplies, type ApplyLagLog, type ApplyLagRecord } from './tablet/apply-lag-log';
import type { TransactionsJson } from './transaction/txn-service';
import type { TabletsJson } from './tserver-json';
import { TabletSizeHistory } from './tablet-size-history';

/** Rows of the applies page's newest applies and commit points (?count=N, up to NEWEST_APPLIES_MAX). */
const NEWEST_APPLIES_SHOWN = 30;
const NEWEST_APPLIES_MAX = 1_000;
/** Least time between two samples of the size history (the periodic sampler runs every second). */
const HISTORY_SAMPLE_GAP_MS = 900;

const EMPTY_SIZES = { regulardb: { memtableBytes: 0, sstBytes: 0 }, intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 } };

type Sizes = typeof EMPTY_SIZES & { regulardb: { rowCache?: { rows: number; bytes: number; hits: number; misses: number } } };

interface TabletMem {
  regularBytes: number;
  regularPeakBytes: number;
  intentsBytes: number;
  intentsPeakBytes: number;
  /** Raft log entries held in memory (the tablet's share of global_log_cache_size_limit_mb). */
  logCacheBytes: number;
  logCachePeakBytes: number;
}

/** Current and peak memtable bytes per tablet, refreshed by sampling the tablets' databases. */
export class TabletMemTrackers {
  private readonly byTablet = new Map<string, TabletMem>();
  private sampling: Promise<void> | undefined;
  /** Sizes over the last minutes for the master's apply timeline (one sample a second at most). */
  readonly history = new TabletSizeHistory();
  private lastHistoryMs = 0;

  constructor(private readonly manager: () => TabletManager) {}

  /** Samples every tablet once; concurrent callers share one sampling pass. */
  sample(): Promise<void> {
    this.sampling ??= this.doSample().finally(() => (this.sampling = undefined));
    return this.sampling;
  }

  /** Record one tablet's sizes (used by callers that already read them, e.g. /tablets). */
  note(tabletId: string, s: Sizes, logCacheBytes?: number): void {
    const m = this.byTablet.get(tabletId) ?? { regularBytes: 0, regularPeakBytes: 0, intentsBytes: 0, intentsPeakBytes: 0, logCacheBytes: 0, logCachePeakBytes: 0 };
    m.regularBytes = s.regulardb.memtableBytes;
    m.intentsBytes = s.intentsdb.memtableBytes;
    m.regularPeakBytes = Math.max(m.regularPeakBytes, m.regularBytes);
    m.intentsPeakBytes = Math.max(m.intentsPeakBytes, m.intentsBytes);
    if (logCacheBytes !== undefined) {
      m.logCacheBytes = logCacheBytes;
      m.logCachePeakBytes = Math.max(m.logCachePeakBytes, logCacheBytes);
    }
    this.byTablet.set(tabletId, m);
  }

  private async doSample(): Promise<void> {
    const live = new Set<string>();
    const rows: Array<{ tabletId: string; table: string; role: string; sizes: Sizes }> = [];
    for (const p of this.manager().list()) {
      live.add(p.tabletId);
      const sizes = await sizesOf(p);
      this.note(p.tabletId, sizes, p.logCacheBytes());
      rows.push({ tabletId: p.tabletId, table: p.meta.tableName, role: p.status().role, sizes });
    }
    for (const id of [...this.byTablet.keys()]) if (!live.has(id)) this.byTablet.delete(id);
    // Console reads sample too; the history keeps the periodic pace (HISTORY_SAMPLE_GAP_MS).
    const now = Date.now();
    if (now - this.lastHistoryMs >= HISTORY_SAMPLE_GAP_MS) {
      this.lastHistoryMs = now;
      this.history.record(now, rows);
    }
  }

  current(tabletId: string): TabletMem | undefined {
    return this.byTablet.get(tabletId);
  }

  /**
   * YugabyteDB's tree: server → Tablets → tablet-<id> → RegularDB / IntentsDB → MemTable, and
   * server → log_cache → log_cache-<id> (the Raft log entries each tablet keeps in memory).
   */
  tree(serverId: string): MemTrackerNode {
    const tablets: MemTrackerNode[] = [];
    const logCaches: MemTrackerNode[] = [];
    let sum = 0;
    let sumPeak = 0;
    let logSum = 0;
    let logSumPeak = 0;
    for (const [id, m] of [...this.byTablet.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const db = (name: string, cur: number, peak: number): MemTrackerNode => ({ id: name, currentBytes: cur, peakBytes: peak, children: [{ id: 'MemTable', currentBytes: cur, peakBytes: peak }] });
      const cur = m.regularBytes + m.intentsBytes;
      // A tablet's peak is at least its current total and at least each child's peak.
      const peak = Math.max(cur, m.regularPeakBytes, m.intentsPeakBytes);
      tablets.push({ id: `tablet-${id}`, currentBytes: cur, peakBytes: peak, children: [db('RegularDB', m.regularBytes, m.regularPeakBytes), db('IntentsDB', m.intentsBytes, m.intentsPeakBytes)] });
      sum += cur;
      sumPeak += peak;
      logCaches.push({ id: `log_cache-${id}`, currentBytes: m.logCacheBytes, peakBytes: m.logCachePeakBytes });
      logSum += m.logCacheBytes;
      logSumPeak += m.logCachePeakBytes;
    }
    const tabletsNode: MemTrackerNode = { id: 'Tablets', currentBytes: sum, peakBytes: sumPeak, children: tablets };
    const logNode: MemTrackerNode = { id: 'log_cache', currentBytes: logSum, peakBytes: logSumPeak, children: logCaches };
    return { id: serverId, currentBytes: sum + logSum, peakBytes: sumPeak + logSumPeak, children: [tabletsNode, logNode] };
  }
}

export async function sizesOf(p: TabletPeer): Promise<Sizes> {
  return p.sizes().catch(() => EMPTY_SIZES);
}

/** A memory tracker with, for a tablet's, the table and this replica's role. */
type LabelledTracker = MemTrackerNode & { table?: string; role?: string; children?: LabelledTracker[] };

export interface TServerWebDeps {
  web: WebServer;
  metrics: Metrics;
  uuid: string;
  rpcAddress: string;
  /** The lab's name of this node (lab_node_name), '' outside a lab. */
  nodeName?: string;
  manager: () => TabletManager;
  trackers: TabletMemTrackers;
  tabletsJson(): Promise<TabletsJson>;
  /** Running transactions on this server's coordinators (status tablets) and participants. */
  transactions?: () => Promise<TransactionsJson>;
  /** Each status tablet replica's memory of forgotten commits. */
  coordinatorMemories?: () => Array<{ tabletId: string; neverCommitted: number; committedAnswers: number; uncovered: number }>;
  /** Raft traffic counters of the server's consensus transport. */
  raftTransport?: () => { messagesSent: number; messagesReceived: number; batchesSent: number; batchesReceived: number; dropped: number; unknownGroup: number; unknownPeer: number };
}

function hex4(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}`;
}

function partitionText(p: { start: number; end: number; keyStart?: string; keyEnd?: string }): string {
  // Range tables: the encoded key bounds (docs/splitting.md).
  if (p.keyStart || p.keyEnd) return `key [${p.keyStart || '-inf'}, ${p.keyEnd || '+inf'})`;
  return `[${hex4(p.start)}, ${hex4(p.end)})`;
}

/**
 * The `read_ht` of /tablet-checksum: a hybrid time as a decimal integer, `now` (this server's hybrid
 * time) or `now-MS` (that many milliseconds before it: replicas a little behind have applied everything
 * up to there, so a live cluster's replicas compare too).
 */
export function parseReadHt(at: string, now: () => HybridTime): HybridTime {
  const rel = /^now(?:-([0-9]{1,9}))?$/.exec(at);
  if (rel) {
    const t = now() - (BigInt(rel[1] ?? '0') * 1000n << LOGICAL_BITS);
    if (t <= 0n) throw new DbError(ErrorCode.INVALID_ARGUMENT, `read_ht ${at} is before the epoch`);
    return t;
  }
  if (!/^[0-9]{1,20}$/.test(at) || BigInt(at) >= 1n << 64n) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `read_ht must be a hybrid time as a decimal integer (physical microseconds << 12 | logical), 'now' or 'now-MS', got '${at}'`);
  }
  return BigInt(at);
}

export function registerTServerPages(d: TServerWebDeps): void {
  const { web, trackers } = d;

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

  // Peers by host:port (this server's own address for itself; '' for a uuid not known here).
  const addressOf = (uuid: string): string => (uuid === '' ? '' : uuid === d.uuid ? d.rpcAddress : (d.manager().addressOf(uuid) ?? ''));
  const tabletsWithAddresses = async () => {
    const { tablets } = await d.tabletsJson();
    return { nodeName: d.nodeName ?? '', rpcAddress: d.rpcAddress, tablets: tablets.map((t) => ({ ...t, leaderAddress: addressOf(t.leaderUuid) })) };
  };
  web.route('/tablets', {
    title: 'Tablets',
    nav: 'Tablets',
    json: tabletsWithAddresses,
    html: async () => {
      const { tablets } = await tabletsWithAddresses();
      const who = d.nodeName ? `${d.nodeName} (${d.rpcAddress})` : d.rpcAddress;
      return (
        `<p>Tablet replicas on ${escapeHtml(who)}. Sizes in binary units (M = MiB); hover for the exact bytes, or read the JSON twin <a href="/api/v1/tablets">/api/v1/tablets</a>.</p>` +
        htmlTable(
          ['Table', 'Tablet', 'Partition', 'State', 'Role', 'Term', 'Leader', 'Commit / applied index', 'IntentsDB memtable', 'IntentsDB SST', 'Intents', 'RegularDB memtable', 'RegularDB SST'],
          tablets.map((t) => [
            t.table,
            link(`/tablet?id=${encodeURIComponent(t.tabletId)}`, t.tabletId),
            partitionText(t.partition),
            t.state,
            t.role === 'leader' || t.role === 'LEADER' ? raw(`<b>${escapeHtml(t.role)}</b>`) : t.role,
            t.term,
            t.leaderAddress ? raw(`<span title="${escapeHtml(t.leaderUuid)}">${escapeHtml(t.leaderAddress)}</span>`) : t.leaderUuid,
            `${t.commitIndex} / ${t.appliedIndex}`,
            bytesCell(t.intentsdb.memtableBytes),
            bytesCell(t.intentsdb.sstBytes),
            t.intentsdb.intentCount,
            bytesCell(t.regulardb.memtableBytes),
            bytesCell(t.regulardb.sstBytes),
          ]),
          { id: 'tablets' },
        )
      );
    },
  });

  web.route('/size-history', {
    title: 'Size history',
    // The master's /apply-timeline reads this from every tserver: ?table=NAME&since_ms=EPOCH_MS.
    json: (req) => {
      const since = Number(req.query.get('since_ms') ?? '0');
      if (!Number.isFinite(since) || since < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `since_ms must be milliseconds since the epoch, got '${req.query.get('since_ms') ?? ''}'`);
      return trackers.history.json({ uuid: d.uuid, rpcAddress: d.rpcAddress, nodeName: d.nodeName ?? '' }, req.query.get('table') ?? undefined, since);
    },
  });

  const tabletDetail = async (req: WebRequest): Promise<TabletDetail> => {
    const id = req.query.get('id') ?? '';
    if (!id) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'give ?id=TABLET_ID');
    const p = d.manager().list().find((x) => x.tabletId === id);
    if (!p && d.manager().failedOpenReplicas().some((f) => f.tabletId === id)) d.manager().get(id); // throws why it FAILED
    if (!p) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `this tablet server hosts no tablet ${id}`, { tabletId: id });
    return detailOf(p, d.manager(), trackers, d.uuid, d.rpcAddress);
  };
  web.route('/tablet', {
    title: 'Tablet',
    json: tabletDetail,
    html: async (req) => {
      const t = await tabletDetail(req);
      const facts = htmlTable(
        ['', ''],
        [
          ['Table', `${t.table} (${t.tableId})`],
          ['Partition', partitionText(t.partition)],
          ['State', t.lastError ? `${t.state}: ${t.lastError}` : t.state],
          ['Role / term / leader', `${t.role} / ${t.term} / ${addressOf(t.leaderUuid) || t.leaderUuid}`],
          ['Commit index / applied index / last index', `${t.commitIndex} / ${t.appliedIndex} / ${t.lastIndex}`],
          ['Raft log from index (older entries garbage-collected)', t.firstIndex],
          ['Frontier RegularDB (term.index)', `${t.frontier.regular.term}.${t.frontier.regular.index}`],
          ['Frontier IntentsDB (term.index)', `${t.frontier.intents.term}.${t.frontier.intents.index}`],
          ['RegularDB memtable / SST', raw(`${bytesCell(t.regulardb.memtableBytes).html} / ${bytesCell(t.regulardb.sstBytes).html}`)],
          ['IntentsDB memtable / SST / intents', raw(`${bytesCell(t.intentsdb.memtableBytes).html} / ${bytesCell(t.intentsdb.sstBytes).html} / ${t.intentsdb.intentCount}`)],
          ['RocksDB background work since open, RegularDB; IntentsDB: memtable flushes / compactions (their CPU ms) / write stall ms', backgroundText(t.background)],
          [`Raft log fdatasyncs since open: count / ms in all (mean) / longest ms / ${WAL_SLOW_SYNC_MS} ms or longer`, walSyncText(t.wal)],
          ['Wait queue: waiting now / waits (enable_wait_queues)', `${t.waitQueue.waiting} / ${t.waitQueue.waits}`],
          ['Read locks taken (serializable reads, as leader)', t.readLocks],
          ['Retryable requests: clients / writes remembered / running / copies answered / late copies refused', `${t.retryable.clients} / ${t.retryable.replicated} / ${t.retryable.running} / ${t.retryable.duplicates} / ${t.retryable.stale}`],
          ['History GC: passes run / skipped (for too few new versions; for no version older than the cutoff), versions scanned / dropped (of which dropped columns\' values)', `${t.historyGc.runs} / ${t.historyGc.skipped} (${t.historyGc.skippedFewNew}; ${t.historyGc.skippedNothingOld}), ${t.historyGc.versionsScanned} / ${t.historyGc.versionsDropped} (${t.historyGc.droppedColumnVersions})`],
          ['History GC: last cutoff HT / dropped / ms; history floor HT (reads below fail SNAPSHOT_TOO_OLD)', `${t.historyGc.lastCutoffHt} / ${t.historyGc.lastDropped} / ${t.historyGc.lastMs}; ${t.historyGc.historyFloorHt === '0' ? '0 (never collected)' : t.historyGc.historyFloorHt}`],
          ['Durability of the Raft log (ASYNC / FLUSH / FSYNC)', t.durability],
          ['Schema version / columns (name:type#id)', `${t.schemaVersion} / ${t.columns.map((c) => `${c.name}:${c.type}#${c.id}`).join(', ')}`],
          ['Row cache rows / bytes / hits / misses', t.regulardb.rowCache ? `${t.regulardb.rowCache.rows} / ${t.regulardb.rowCache.bytes} / ${t.regulardb.rowCache.hits} / ${t.regulardb.rowCache.misses}` : ''],
        ],
        { id: 'tablet' },
      );
      const cfg = htmlTable(
        ['Peer', 'Member', 'Role', 'Address', 'Match index'],
        t.raftConfig.map((r) => [r.uuid, r.memberType, r.role === 'LEADER' ? raw('<b>LEADER</b>') : r.role, r.rpcAddress, r.matchIndex ?? '']),
        { id: 'raft-config' },
      );
      return `<h2>${escapeHtml(t.tabletId)}</h2>${facts}<h2>Raft config</h2>${cfg}`;
    },
  });

  // Replica comparison. `regulardb`: equal digests mean the same keys, versions and values in
  // RegularDB; each replica collects old versions (history GC) and applies committed intents on its
  // own, so these compare only between replicas with equal history floors and nothing left to apply.
  // With ?read_ht=HT (or now / now-MS: this server's hybrid time), `visible` digests the rows the replica shows at that hybrid time (resolving
  // intents through the status tablets): equal on replicas that applied the same Raft index, once
  // no transaction they met is pending, whatever their floors (at or below HT) and apply progress.
  web.route('/tablet-checksum', {
    title: 'Tablet checksum',
    json: async (req) => {
      const id = req.query.get('id') ?? '';
      const p = d.manager().list().find((x) => x.tabletId === id);
      if (!p) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `this tablet server hosts no tablet ${id}`, { tabletId: id });
      const at = req.query.get('read_ht');
      const visible = at === null ? undefined : await p.visibleChecksum(parseReadHt(at, () => p.hybridNow()));
      return {
        tabletId: id,
        regulardb: await p.regularChecksum(),
        historyFloorHt: String(p.historyFloorHt() ?? 0n),
        ...(visible ? { visible: { ...visible, readHt: String(visible.readHt) } } : {}),
      };
    },
  });

  // Apply lag per replica (tablet/apply-lag-log.ts): ?since=MICROS gives the applies finished since.
  // The page: each tablet replica's applies of the last ?seconds (default 60), then the newest ones.
  web.route('/txn-applies', {
    title: 'Transaction applies',
    nav: 'Applies',
    html: async (req) => {
      const secondsText = req.query.get('seconds') ?? '60';
      const seconds = Number(secondsText);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) throw new DbError(ErrorCode.INVALID_ARGUMENT, `seconds must be a whole number from 1 to 86400, got '${secondsText}'`);
      const nowMicros = Date.now() * 1000;
      const since = nowMicros - seconds * 1_000_000;
      const { tablets } = await d.tabletsJson();
      const info = new Map(tablets.map((t) => [t.tabletId, t]));
      const peers = d.manager().list();
      const ms = (x: number | undefined): string => (x === undefined ? '' : x.toFixed(1));
      const at = (micros: number): string => new Date(micros / 1000).toISOString();
      const perTablet = htmlTable(
        ['Table', 'Tablet', 'Role', `Applies (last ${seconds} s)`, 'Lag p50 ms', 'Lag p99 ms', 'Lag max ms', 'Newest apply (s ago)', 'Its lag ms'],
        peers.map((p) => {
          const s = summarizeApplies(p.applyLag.since(since));
          const t = info.get(p.tabletId);
          return [t?.table ?? '', link(`/tablet?id=${encodeURIComponent(p.tabletId)}`, p.tabletId), t?.role ?? '', s.applies, ms(s.p50Ms), ms(s.p99Ms), ms(s.maxMs), s.last ? ((nowMicros - s.last.appliedMicros) / 1e6).toFixed(1) : '', ms(s.last?.lagMs)];
        }),
        { id: 'apply-lag' },
      );
      const countText = req.query.get('count') ?? String(NEWEST_APPLIES_SHOWN);
      const count = Number(countText);
      if (!Number.isInteger(count) || count < 1 || count > NEWEST_APPLIES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `count must be a whole number from 1 to ${NEWEST_APPLIES_MAX}, got '${countText}'`);
      // The newest records of one log kind across this server's tablet replicas, newest first, whatever
      // their age: a person comes back to the page minutes after the apply the blog waits for.
      const newest = (log: (p: TabletPeer) => ApplyLagLog): Array<{ tabletId: string; r: ApplyLagRecord }> =>
        peers
          .flatMap((p) => log(p).since(0).slice(-count).map((r) => ({ tabletId: p.tabletId, r })))
          .sort((a, b) => b.r.appliedMicros - a.r.appliedMicros)
          .slice(0, count);
      const applies = htmlTable(
        ['Table', 'Tablet', 'Role', 'Transaction', 'Commit time', 'APPLY entry applied (ms after commit)', 'Intents in RegularDB (ms after commit: the lag)', 'Applied (s ago)'],
        newest((p) => p.applyLag).map(({ tabletId, r }) => [info.get(tabletId)?.table ?? '', tabletId, info.get(tabletId)?.role ?? '', r.txnId, at(r.commitMicros), r.markedMicros === undefined ? '' : ms((r.markedMicros - r.commitMicros) / 1000), ms(r.lagMs), ((nowMicros - r.appliedMicros) / 1e6).toFixed(1)]),
        { id: 'applies' },
      );
      const commits = htmlTable(
        ['Status tablet', 'Transaction', 'Commit time', 'COMMITTED record applied (ms after commit)'],
        newest((p) => p.commitPoints).map(({ tabletId, r }) => [tabletId, r.txnId, at(r.commitMicros), ms(r.lagMs)]),
        { id: 'commit-points' },
      );
      return (
        `<p>After a transaction commits, each replica of each participant tablet moves its intents from IntentsDB into RegularDB when it applies the tablet's APPLY entry, on its own schedule (<code>TEST_inject_sleep_before_applying_intents_ms</code> delays one). Lag = commit hybrid time → that replica's intents in RegularDB, by this server's clock. Per tablet replica: the last ${seconds} s (<code>?seconds=N</code>); newest applies: the last ${count} whatever their age (<code>?count=N</code>); JSON: <a href="/api/v1/txn-applies?since=${Math.floor(since)}">/api/v1/txn-applies?since=MICROS</a>.</p>` +
        `<h2>Newest applies</h2>${applies}<h2>Per tablet replica (last ${seconds} s)</h2>${perTablet}<h2>Commit points (this server's status tablet replicas)</h2>${commits}`
      );
    },
    json: (req) => {
      const since = Number(req.query.get('since') ?? '0');
      if (!Number.isFinite(since) || since < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `since must be microseconds since the epoch, got '${req.query.get('since') ?? ''}'`);
      return Promise.resolve({
        uuid: d.uuid,
        applies: d
          .manager()
          .list()
          .flatMap((p) => p.applyLag.since(since).map((r) => ({ tabletId: p.tabletId, ...r }))),
        // Status tablets' replicas: when each applied a transaction's COMMITTED record (its commit point).
        commits: d
          .manager()
          .list()
          .flatMap((p) => p.commitPoints.since(since).map((r) => ({ tabletId: p.tabletId, txnId: r.txnId, commitMicros: r.commitMicros, committedMicros: r.appliedMicros }))),
      });
    },
  });

  const txns = d.transactions;
  if (txns) {
    web.route('/transactions', {
      title: 'Transactions',
      nav: 'Transactions',
      json: () => txns(),
      html: async () => {
        const t = await txns();
        const coord = htmlTable(
          ['Status tablet', 'Role', 'Transaction', 'Status', 'Isolation', 'Start HT', 'Commit HT', 'Age (ms)', 'Last heartbeat (ms ago)', 'Participants', 'Not acknowledged'],
          t.coordinators.flatMap((c) =>
            c.transactions.map((x) => [c.tabletId, c.role, x.txnId, x.replicated ? x.status : `${x.status} (leader only, not yet replicated)`, x.isolation, String(x.startHt), String(x.commitHt), x.ageMs, x.lastHeartbeatMsAgo, x.participants.join(', '), x.unacked.join(', ')]),
          ),
          { id: 'coordinator-transactions' },
        );
        const part = htmlTable(
          ['Tablet', 'Table', 'Role', 'Transaction', 'Status tablet', 'Isolation', 'Start HT', 'Intents', 'Applying at commit HT'],
          t.participants.flatMap((p) => p.transactions.map((x) => [p.tabletId, p.table, p.role, x.txnId, x.statusTablet, x.isolation, x.startHt, x.intentCount, x.applyingCommitHt])),
          { id: 'participant-transactions' },
        );
        const memory = htmlTable(
          ['Status tablet', 'Role', 'Covers transactions started from HT (history floor)', 'Answers: never committed', 'Answers: committed and forgotten', 'Answers left indefinite (started earlier)'],
          t.coordinators.map((c) => [c.tabletId, c.role, c.forgottenCommits.historyFloorHt === '0' ? '0 (history never collected: all)' : c.forgottenCommits.historyFloorHt, c.forgottenCommits.neverCommitted, c.forgottenCommits.committedAnswers, c.forgottenCommits.uncovered]),
          { id: 'coordinator-memory' },
        );
        return `<h2>Coordinators (status tablets)</h2>${coord}<h3>Lost commit answers: what each status tablet replica can prove</h3>${memory}<h2>Participants (provisional records per tablet)</h2>${part}`;
      },
    });
  }

  // Each tablet's tracker names its table and this replica's role, as a person reading the page asks.
  const memJson = async (): Promise<LabelledTracker> => {
    await trackers.sample();
    const tree: LabelledTracker = trackers.tree(`server-${d.uuid}`);
    const peers = new Map(d.manager().list().map((p) => [p.tabletId, p]));
    const label = (n: LabelledTracker): void => {
      const p = /^(?:tablet|log_cache)-(.+)$/.exec(n.id) ? peers.get(n.id.replace(/^(?:tablet|log_cache)-/, '')) : undefined;
      if (p) {
        n.table = p.meta.tableName;
        n.role = p.status().role;
      }
      for (const c of n.children ?? []) label(c);
    };
    label(tree);
    return tree;
  };
  // Replaces the kit's /mem-trackers: sampling the databases is asynchronous.
  web.route('/mem-trackers', {
    title: 'Memory trackers',
    nav: 'Memory',
    json: memJson,
    html: async () => {
      const rows: Array<[ReturnType<typeof raw>, string, string, ReturnType<typeof raw>, ReturnType<typeof raw>]> = [];
      const walk = (n: LabelledTracker, depth: number): void => {
        rows.push([raw(`${'&nbsp;'.repeat(depth * 4)}${escapeHtml(n.id)}`), n.table ?? '', n.role ?? '', bytesCell(n.currentBytes), bytesCell(n.peakBytes)]);
        for (const c of n.children ?? []) walk(c, depth + 1);
      };
      walk(await memJson(), 0);
      return `<p>Sizes in binary units (M = MiB), exact bytes on hover and in the JSON twin <a href="/api/v1/mem-trackers">/api/v1/mem-trackers</a>.</p>` + htmlTable(['id', 'table', 'role of this replica', 'current', 'peak'], rows, { id: 'mem-trackers' });
    },
  });

  // Per-tablet gauges, refreshed from the last sample at scrape time (a scrape also samples first
  // through the collect hook below, best effort: prom-client awaits async collect functions).
  const gauge = (name: string, pick: (m: TabletMem) => number): void => {
    d.metrics.gauge(name, `${name.replace(/_/g, ' ')} bytes per tablet`, ['tablet_id'], (g) => {
      g.reset();
      for (const p of d.manager().list()) {
        const m = trackers.current(p.tabletId);
        if (m) g.set({ tablet_id: p.tabletId }, pick(m));
      }
    });
  };
  gauge('mem_tracker_RegularDB_MemTable', (m) => m.regularBytes);
  gauge('mem_tracker_IntentsDB_MemTable', (m) => m.intentsBytes);
  gauge('mem_tracker_log_cache', (m) => m.logCacheBytes);
  d.metrics.gauge('log_cache_evicted_for_global_limit_bytes', 'Raft log cache bytes evicted to keep every tablet together within global_log_cache_size_limit_mb, since the server started', [], (g) => g.set(d.manager().logCacheBudget.evicted()));
  d.metrics.gauge('tablets_hosted', 'Tablet replicas this server hosts', [], (g) => g.set(d.manager().list().length));
  registerIoGauges(d);
}

/** The tablet page's line for the Raft log's fdatasyncs. */
function walSyncText(w: WalSyncTimes | undefined): string {
  if (w === undefined) return '–';
  return `${w.fsyncs} / ${Math.round(w.syncMs)} (${w.fsyncs > 0 ? (w.syncMs / w.fsyncs).toFixed(2) : '–'}) / ${Math.round(w.syncMaxMs)} / ${w.slowSyncs}`;
}

/** The tablet page's line for RocksDB's background work of both databases. */
function backgroundText(b: { regulardb?: BackgroundWork; intentsdb?: BackgroundWork }): string {
  const one = (w: BackgroundWork | undefined): string =>
    w === undefined ? '–' : `${w.flushes} / ${w.compactions} (${Math.round(w.flushCpuSeconds * 1000)} / ${Math.round(w.compactionCpuSeconds * 1000)}) / ${Math.round(w.stallSeconds * 1000)}`;
  return `${one(b.regulardb)}; ${one(b.intentsdb)}`;
}

/** tserver_rocksdb_background's kinds → the BackgroundWork field each reports. */
const BACKGROUND_KINDS: ReadonlyArray<readonly [string, keyof BackgroundWork]> = [
  ['flushes', 'flushes'],
  ['flush_seconds', 'flushSeconds'],
  ['flush_cpu_seconds', 'flushCpuSeconds'],
  ['compactions', 'compactions'],
  ['compaction_seconds', 'compactionSeconds'],
  ['compaction_cpu_seconds', 'compactionCpuSeconds'],
  ['stall_seconds', 'stallSeconds'],
];

/**
 * What the work cost in disk calls, per tablet replica since it opened (gauges: a replica that is
 * deleted or reopened starts again) and in Raft traffic since the server started. Dividing the change
 * over a run by the operations it did gives the cost of one operation (the benchmark does).
 */
function registerIoGauges(d: TServerWebDeps): void {
  const perTablet = (name: string, help: string, labels: readonly string[], set: (g: Gauge<string>, tabletId: string, io: NonNullable<ReturnType<TabletPeer['ioCounts']>>) => void): void => {
    d.metrics.gauge(name, help, ['tablet_id', ...labels], (g) => {
      g.reset();
      for (const p of d.manager().list()) {
        const io = p.ioCounts();
        if (io) set(g, p.tabletId, io);
      }
    });
  };
  perTablet('tserver_docdb_write_batches', 'Write batches (one RocksDB write call each) per tablet replica and database since it opened; synced="true": with a WAL fsync', ['db', 'synced'], (g, tablet_id, io) => {
    for (const db of ['regulardb', 'intentsdb'] as const) {
      const c = io.docdb[db];
      g.set({ tablet_id, db, synced: 'true' }, c.syncedBatches);
      g.set({ tablet_id, db, synced: 'false' }, c.batches - c.syncedBatches);
    }
  });
  perTablet('tserver_docdb_write_ops', 'Ops in those write batches by kind (put, del, del_range) per tablet replica and database', ['db', 'op'], (g, tablet_id, io) => {
    for (const db of ['regulardb', 'intentsdb'] as const) {
      const c = io.docdb[db];
      g.set({ tablet_id, db, op: 'put' }, c.puts);
      g.set({ tablet_id, db, op: 'del' }, c.dels);
      g.set({ tablet_id, db, op: 'del_range' }, c.delRanges);
    }
  });
  d.metrics.gauge(
    'tserver_rocksdb_background',
    "RocksDB's background work per tablet replica and database since it opened, from RocksDB's own statistics: memtable flushes (kind=\"flushes\") and compaction jobs (\"compactions\") completed, the seconds they ran (\"flush_seconds\", \"compaction_seconds\") and their CPU seconds on RocksDB's threads (\"flush_cpu_seconds\", \"compaction_cpu_seconds\"), and the seconds writes were stalled (\"stall_seconds\")",
    ['tablet_id', 'db', 'kind'],
    (g) => {
      g.reset();
      for (const p of d.manager().list()) {
        const w = p.backgroundWork();
        for (const db of ['regulardb', 'intentsdb'] as const) {
          const b = w?.[db];
          if (b === undefined) continue;
          for (const [kind, v] of BACKGROUND_KINDS) g.set({ tablet_id: p.tabletId, db, kind }, b[v]);
        }
      }
    },
  );
  d.metrics.gauge('tserver_retryable_requests', 'Retryable requests per tablet replica: clients with writes remembered (kind="clients"), writes remembered ("replicated"), running as leader ("running"), resent copies answered without running them again ("duplicates"), late copies refused with STALE_REQUEST ("stale")', ['tablet_id', 'kind'], (g) => {
    g.reset();
    for (const p of d.manager().list()) {
      const r = p.retryable.stats();
      for (const kind of ['clients', 'replicated', 'running', 'duplicates', 'stale'] as const) g.set({ tablet_id: p.tabletId, kind }, r[kind]);
    }
  });
  d.metrics.gauge('tserver_history_gc', 'History GC of RegularDB per tablet replica (history_gc_interval_sec): passes run (kind="runs"), skipped ("skipped": nothing written above the last cutoff, or too few versions written since the last pass — history_gc_min_new_versions_pct; of those, the latter: "skipped_few_new"), versions scanned ("versions_scanned") and dropped ("versions_dropped"; of those, values of dropped columns: "dropped_column_versions")', ['tablet_id', 'kind'], (g) => {
    g.reset();
    for (const p of d.manager().list()) {
      const h = p.historyGcStats;
      g.set({ tablet_id: p.tabletId, kind: 'runs' }, h.runs);
      g.set({ tablet_id: p.tabletId, kind: 'skipped' }, h.skipped);
      g.set({ tablet_id: p.tabletId, kind: 'skipped_few_new' }, h.skippedFewNew);
      g.set({ tablet_id: p.tabletId, kind: 'versions_scanned' }, h.versionsScanned);
      g.set({ tablet_id: p.tabletId, kind: 'versions_dropped' }, h.versionsDropped);
      g.set({ tablet_id: p.tabletId, kind: 'dropped_column_versions' }, h.droppedColumnVersions);
    }
  });
  const memories = d.coordinatorMemories;
  if (memories) {
    d.metrics.gauge('tserver_txn_forgotten_commits', 'Status answers of a status tablet replica to clients settling a lost commit answer, from the record\'s history in RegularDB: answers that proved the transaction never committed (kind="never_committed"), that told a forgotten one COMMITTED (kind="committed_answers"), left indefinite because the transaction started below the history floor (kind="uncovered")', ['tablet_id', 'kind'], (g) => {
      g.reset();
      for (const m of memories()) {
        g.set({ tablet_id: m.tabletId, kind: 'never_committed' }, m.neverCommitted);
        g.set({ tablet_id: m.tabletId, kind: 'committed_answers' }, m.committedAnswers);
        g.set({ tablet_id: m.tabletId, kind: 'uncovered' }, m.uncovered);
      }
    });
  }
  perTablet('tserver_log_fsyncs', 'fdatasync calls on the Raft log segments of a tablet replica since it opened', [], (g, tablet_id, io) => {
    if (io.logFsyncs !== undefined) g.set({ tablet_id }, io.logFsyncs);
  });
  perTablet('tserver_log_sync_seconds', "Seconds the fdatasync calls on a tablet replica's Raft log segments took in all since it opened, each from the call to its completion seen by the event loop (the wait for a thread-pool thread, the device flush, the loop's delay); divided by tserver_log_fsyncs, the mean", [], (g, tablet_id, io) => {
    if (io.walSync !== undefined) g.set({ tablet_id }, io.walSync.syncMs / 1000);
  });
  perTablet('tserver_log_slow_syncs', `fdatasync calls on a tablet replica's Raft log segments since it opened that took ${WAL_SLOW_SYNC_MS} ms or longer (a disk stall: every write of the tablet waits for it)`, [], (g, tablet_id, io) => {
    if (io.walSync !== undefined) g.set({ tablet_id }, io.walSync.slowSyncs);
  });
  perTablet('tserver_raft_early', 'What a tablet replica did while a Raft log sync of newer entries ran, instead of after it: committed entries handed to the apply stage (kind="applied_entries"), how much sooner in all (kind="applied_saved_ms": each one to the end of that sync), and leader message batches sent (kind="sends")', ['kind'], (g, tablet_id, io) => {
    g.set({ tablet_id, kind: 'applied_entries' }, io.raftEarly.entries);
    g.set({ tablet_id, kind: 'applied_saved_ms' }, Math.round(io.raftEarly.savedMs));
    g.set({ tablet_id, kind: 'sends' }, io.raftEarly.sends);
  });
  perTablet('tserver_raft_apply', 'The apply stage of a tablet replica since it opened: committed entries applied (kind="entries") in how many state-machine calls (kind="batches"), the ms those entries waited for their call in all (kind="wait_ms": hand-out to start) and the ms the calls ran in all (kind="run_ms": the RocksDB writes and the event-loop turns they await)', ['kind'], (g, tablet_id, io) => {
    g.set({ tablet_id, kind: 'entries' }, io.raftApply.entries);
    g.set({ tablet_id, kind: 'batches' }, io.raftApply.batches);
    g.set({ tablet_id, kind: 'wait_ms' }, Math.round(io.raftApply.waitMs));
    g.set({ tablet_id, kind: 'run_ms' }, Math.round(io.raftApply.runMs));
  });
  const raft = d.raftTransport;
  if (raft) {
    d.metrics.gauge('tserver_raft_messages', 'Raft messages this server sent or received since it started (all tablets; direction="sent"|"received"), or dropped on the way out or in (direction="dropped": lab faults TEST_drop_traffic_peers and TEST_drop_raft_messages_probability, undecodable ones, unknown tablets or peers)', ['direction'], (g) => {
      const m = raft();
      g.set({ direction: 'sent' }, m.messagesSent);
      g.set({ direction: 'received' }, m.messagesReceived);
      g.set({ direction: 'dropped' }, m.dropped + m.unknownGroup + m.unknownPeer);
    });
    d.metrics.gauge('tserver_raft_batches', 'Raft batches (one frame per destination and event-loop turn) sent or received since the server started', ['direction'], (g) => {
      const m = raft();
      g.set({ direction: 'sent' }, m.batchesSent);
      g.set({ direction: 'received' }, m.batchesReceived);
    });
  }
}

/** Counts handled RPCs by method (write/read/scan ops) without touching the service itself. */
export function countingServer(server: RpcServer, metrics: Metrics): RpcServer {
  const ops = metrics.counter('tserver_rpc_ops_total', 'Tablet server RPCs handled, by method (Write, Read, Scan, the transaction coordinator and participant methods, ...)', ['method']);
  return {
    handle: <Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void =>
      server.handle(m, (req: Req, ctx) => {
        ops.inc({ method: m.method });
        return h(req, ctx);
      }),
    onOneway: (m, h) => server.onOneway(m, h),
    setStarting: (reason) => server.setStarting(reason),
    start: () => server.start(),
    stop: () => server.stop(),
    get address(): string {
      return server.address;
    },
  };
}

export interface TabletDetail {
  tabletId: string;
  table: string;
  tableId: string;
  partition: { start: number; end: number };
  state: string;
  role: string;
  term: number;
  leaderUuid: string;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  /** RocksDB's background work per database since the replica opened (a database on an engine without any is left out). */
  background: { regulardb?: BackgroundWork; intentsdb?: BackgroundWork };
  /** The Raft log's fdatasyncs since the replica opened and how long they took (absent for a log without files). */
  wal?: WalSyncTimes;
  /** First entry still in the Raft log (log GC discards what both databases hold durably below it). */
  firstIndex: number;
  frontier: { regular: { term: number; index: number }; intents: { term: number; index: number } };
  regulardb: Sizes['regulardb'] & { memtablePeakBytes: number };
  intentsdb: Sizes['intentsdb'] & { memtablePeakBytes: number };
  raftConfig: Array<{ uuid: string; memberType: 'VOTER' | 'LEARNER'; role: 'LEADER' | 'FOLLOWER' | 'LEARNER'; rpcAddress: string; matchIndex?: number }>;
  /** Why the replica FAILED ('' while it runs). */
  lastError: string;
  /** Operations waiting for pending transactions now, and waits since the replica opened (enable_wait_queues). */
  waitQueue: { waiting: number; waits: number };
  /** Read locks (serializable transactions' WRITE_INTENTS of reads) this replica proposed as leader. */
  readLocks: number;
  /** The table's schema as this replica has it (ALTER TABLE moves it through the tablet's Raft log). */
  schemaVersion: number;
  columns: Array<{ name: string; id: number; type: string; nullable: boolean }>;
  /** The Raft log level in force (ASYNC | FLUSH | FSYNC; docs/durability.md). */
  durability: string;
  /**
   * Retryable requests: clients with writes remembered here, writes remembered, writes running (as
   * leader), resent copies answered without running them again, late copies refused (STALE_REQUEST).
   */
  retryable: { clients: number; replicated: number; running: number; duplicates: number; stale: number };
  /**
   * History GC (history_gc_interval_sec): passes run and skipped (nothing written above the last
   * cutoff; skippedFewNew: too few versions written since the last pass; skippedNothingOld: every
   * version newer than the cutoff — a tablet younger than the retention interval), versions scanned and dropped in all (droppedColumnVersions: of those, values of dropped
   * columns, collected whatever their time), the last pass's cutoff, drops and duration, and the
   * history floor (reads below it fail SNAPSHOT_TOO_OLD; '0': never collected). Hybrid times as decimal strings.
   */
  historyGc: { runs: number; skipped: number; skippedFewNew: number; skippedNothingOld: number; versionsScanned: number; versionsDropped: number; droppedColumnVersions: number; lastCutoffHt: string; lastDropped: number; lastMs: number; historyFloorHt: string };
}

async function detailOf(p: TabletPeer, manager: TabletManager, trackers: TabletMemTrackers, selfUuid: string, selfAddress: string): Promise<TabletDetail> {
  const st = p.status();
  const wal = p.walSync();
  const sizes = await sizesOf(p);
  trackers.note(p.tabletId, sizes);
  const mem = trackers.current(p.tabletId);
  const f = await p
    .db()
    .frontier()
    .catch(() => ({ regular: { term: 0, index: 0 }, intents: { term: 0, index: 0 } }));
  const member = (uuid: string, memberType: 'VOTER' | 'LEARNER'): TabletDetail['raftConfig'][number] => {
    const match = st.progress?.[uuid]?.match;
    return {
      uuid,
      memberType,
      role: memberType === 'LEARNER' ? 'LEARNER' : uuid === st.leader ? 'LEADER' : 'FOLLOWER',
      rpcAddress: uuid === selfUuid ? selfAddress : (manager.addressOf(uuid) ?? ''),
      ...(match !== undefined ? { matchIndex: match } : {}),
    };
  };
  return {
    tabletId: p.tabletId,
    table: p.meta.tableName,
    tableId: p.meta.tableId,
    partition: p.meta.partition,
    state: p.state,
    role: st.role,
    term: st.term,
    leaderUuid: st.leader,
    commitIndex: st.commit,
    appliedIndex: st.appliedIndex,
    lastIndex: st.lastIndex,
    firstIndex: p.logFirstIndex(),
    frontier: { regular: { term: f.regular.term, index: f.regular.index }, intents: { term: f.intents.term, index: f.intents.index } },
    background: p.backgroundWork() ?? {},
    ...(wal ? { wal } : {}),
    regulardb: { ...sizes.regulardb, memtablePeakBytes: mem?.regularPeakBytes ?? sizes.regulardb.memtableBytes },
    intentsdb: { ...sizes.intentsdb, memtablePeakBytes: mem?.intentsPeakBytes ?? sizes.intentsdb.memtableBytes },
    raftConfig: [...st.conf.voters.map((u) => member(u, 'VOTER')), ...st.conf.learners.map((u) => member(u, 'LEARNER'))],
    lastError: p.lastError,
    waitQueue: { waiting: p.waitQueue.size(), waits: p.waitQueue.waits },
    readLocks: p.metrics.readLocks,
    schemaVersion: p.meta.schemaVersion,
    columns: p.meta.schema.columns.map((c) => ({ ...c })),
    durability: p.walDurability(),
    retryable: p.retryable.stats(),
    historyGc: { ...p.historyGcStats, lastCutoffHt: String(p.historyGcStats.lastCutoffHt), historyFloorHt: String(p.historyFloorHt() ?? 0n) },
  };
}
