/**
 * The tserver console's memory page (/mem-trackers) and the per-tablet gauges on /metrics and
 * /prometheus-metrics (named like YugabyteDB's: mem_tracker_RegularDB_MemTable{tablet_id=…}), and
 * the RPC counter wrapped around the service.
 */
import type { Gauge } from 'prom-client';
import type { BackgroundWork } from '../docdb';
import { bytesCell, escapeHtml, htmlTable, raw, type Handler, type MemTrackerNode, type MethodDef, type Metrics, type RpcServer } from '../rpc';
import type { TabletPeer } from './tablet/tablet-peer';
import { WAL_SLOW_SYNC_MS } from '../raft';
import type { TabletMem } from './tablet-mem-trackers';
import type { TServerWebDeps } from './tserver-web-deps';

/** A memory tracker with, for a tablet's, the table and this replica's role. */
type LabelledTracker = MemTrackerNode & { table?: string; role?: string; children?: LabelledTracker[] };

/** Replaces the kit's /mem-trackers: sampling the databases is asynchronous. */
export function registerMemPage(d: TServerWebDeps): void {
  const { web, trackers } = d;
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
}

/** Memtable and log cache bytes per tablet, and the tablets hosted. */
export function registerMemGauges(d: TServerWebDeps): void {
  const { trackers } = d;
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
export function registerIoGauges(d: TServerWebDeps): void {
  const perTablet = perTabletGauge(d);
  registerDocdbGauges(d, perTablet);
  registerTabletWorkGauges(d);
  registerRaftGauges(d, perTablet);
}

type IoCounts = NonNullable<ReturnType<TabletPeer['ioCounts']>>;
type PerTabletGauge = (name: string, help: string, labels: readonly string[], set: (g: Gauge<string>, tabletId: string, io: IoCounts) => void) => void;

/** Registers a gauge set from each tablet replica's I/O counts at scrape time (replicas without any are left out). */
function perTabletGauge(d: TServerWebDeps): PerTabletGauge {
  return (name, help, labels, set) => {
    d.metrics.gauge(name, help, ['tablet_id', ...labels], (g) => {
      g.reset();
      for (const p of d.manager().list()) {
        const io = p.ioCounts();
        if (io) set(g, p.tabletId, io);
      }
    });
  };
}

/** DocDB's write batches and RocksDB's background work per tablet replica and database. */
function registerDocdbGauges(d: TServerWebDeps, perTablet: PerTabletGauge): void {
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
}

/** Retryable requests, history GC and status tablets' answers for lost commits. */
function registerTabletWorkGauges(d: TServerWebDeps): void {
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
}

/** The Raft log's syncs, the apply stage and the server's Raft traffic. */
function registerRaftGauges(d: TServerWebDeps, perTablet: PerTabletGauge): void {
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
