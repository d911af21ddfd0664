/**
 * Metrics of one server: a prom-client Registry of its own, so two servers in one process (tests,
 * simulation) never clash over metric names. Served as JSON on /metrics and as text on
 * /prometheus-metrics by the console kit.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { threadKindSums, threadsOf } from '../common/proc-threads';
import type { RpczConnection } from './rpcz';
import type { ConnectionStats, RpcClient, RpcServer } from './types';

export interface MetricsOptions {
  /** Labels on every metric (e.g. { server: 'tserver-1' }). */
  defaultLabels?: Record<string, string>;
  /** Also collect Node process metrics (CPU, heap, event-loop lag). */
  processMetrics?: boolean;
}

/** Resolution of the event-loop lag monitor (nodejs_eventloop_lag_* metrics). */
export const EVENT_LOOP_MONITOR_MS = 100;

/** The /healthz view of a server's RPC connections: from its clients (in) and its own (out). */
export function rpcConnectionsOf(server: RpcServer, client: RpcClient): { in?: ConnectionStats; out?: ConnectionStats } {
  const inStats = server.connectionStats?.();
  const outStats = client.connectionStats?.();
  return { ...(inStats ? { in: inStats } : {}), ...(outStats ? { out: outStats } : {}) };
}

export class Metrics {
  readonly registry = new Registry();

  constructor(opts: MetricsOptions = {}) {
    if (opts.defaultLabels) this.registry.setDefaultLabels(opts.defaultLabels);
    // The event-loop lag monitor samples with a timer; prom-client's default of every 10 ms woke an
    // idle server's event loop 100 times a second (most of its idle wake-ups). Every 100 ms still
    // records any stall longer than that, which is what the lag metrics are for.
    if (opts.processMetrics) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_MONITOR_MS });
      this.threadCpu();
    }
  }

  /**
   * process_thread_cpu_seconds{kind}: this process's CPU by kind of thread (common/proc-threads.ts), so
   * a console shows whether the event loop — where every message, Raft round and reply waits — is what
   * keeps the server busy, or the thread pool and RocksDB's background work. Linux only (/proc).
   */
  private threadCpu(): void {
    this.gauge(
      'process_thread_cpu_seconds',
      'CPU seconds (user + system) of this process\'s live threads since they started, by kind: kind="main" (the event loop: all JavaScript), "rocksdb" (RocksDB\'s background threads: memtable flushes, compactions), "other" (libuv\'s pool: RocksDB writes and reads, WAL fdatasyncs, file I/O; V8\'s workers: garbage collection, the optimizing compiler)',
      ['kind'],
      (g) => {
        const rows = threadsOf(process.pid);
        if (rows.length === 0) return;
        for (const k of threadKindSums(rows)) g.set({ kind: k.kind }, k.userSeconds + k.systemSeconds);
      },
    );
  }

  private existing<T>(name: string): T | undefined {
    return this.registry.getSingleMetric(name) as T | undefined;
  }

  /** Get or create (idempotent by name, so modules may ask for the same metric twice). */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter<string> {
    return this.existing<Counter<string>>(name) ?? new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A gauge; `collect` runs at scrape time to refresh its value. */
  gauge(name: string, help: string, labelNames: readonly string[] = [], collect?: (g: Gauge<string>) => void): Gauge<string> {
    const found = this.existing<Gauge<string>>(name);
    if (found) return found;
    return new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect
        ? {
            collect(this: Gauge<string>) {
              collect(this);
            },
          }
        : {}),
    });
  }

  /**
   * rpc_connections: a server's RPC connections from its clients (side="server") and its own to
   * other servers (side="client"), open now (kind="open") and closed since start because a keepalive
   * ping stayed unanswered for rpc_connection_timeout_ms (kind="closed_unanswered_ping": a peer cut
   * off, paused or gone); on the client side also the connect attempts given up because their TCP
   * connect went unanswered for rpc_tcp_connect_timeout_ms (kind="connect_timed_out": a peer cut off).
   */
  rpcConnections(server: RpcServer, client: RpcClient): void {
    this.gauge('rpc_connections', "RPC connections of this server: from its clients (side=\"server\") and its own to other servers (side=\"client\"); open now (kind=\"open\"), and closed since start because a keepalive ping stayed unanswered for rpc_connection_timeout_ms (kind=\"closed_unanswered_ping\"); client side: connect attempts whose TCP connect went unanswered for rpc_tcp_connect_timeout_ms (kind=\"connect_timed_out\"); server side: refusals (kind=\"closed_unauthenticated\", \"closed_stalled_frame\", \"refused_per_ip\")", ['side', 'kind'], (g) => {
      const c = rpcConnectionsOf(server, client);
      for (const [side, st] of [['server', c.in], ['client', c.out]] as const) {
        if (!st) continue;
        g.set({ side, kind: 'open' }, st.open);
        g.set({ side, kind: 'closed_unanswered_ping' }, st.closedUnansweredPing);
        if (st.connectTimedOut !== undefined) g.set({ side, kind: 'connect_timed_out' }, st.connectTimedOut);
        // Refusals (docs/security.md): no answer to the cluster secret, a truncated frame, too many from one IP.
        if (st.closedUnauthenticated !== undefined) g.set({ side, kind: 'closed_unauthenticated' }, st.closedUnauthenticated);
        if (st.closedStalledFrame !== undefined) g.set({ side, kind: 'closed_stalled_frame' }, st.closedStalledFrame);
        if (st.refusedPerIp !== undefined) g.set({ side, kind: 'refused_per_ip' }, st.refusedPerIp);
      }
    });
    // What /rpcz lists, summed for alerting: calls this server is answering (side="server") and
    // waiting on (side="client") now, and the age of the oldest — a call stuck behind a partition,
    // a paused peer or a slow disk grows it long before it times out.
    const sides = (): Array<[side: 'server' | 'client', conns: RpczConnection[] | undefined]> => [
      ['server', server.rpcz?.()],
      ['client', client.rpcz?.()],
    ];
    this.gauge('rpc_calls_in_flight', 'RPC calls in flight now: being answered by this server (side="server") and made by it, awaiting an answer (side="client"); /rpcz lists them', ['side'], (g) => {
      for (const [side, conns] of sides()) if (conns) g.set({ side }, conns.reduce((n, c) => n + c.callsInFlight, 0));
    });
    this.gauge('rpc_oldest_call_in_flight_seconds', 'Age of the oldest RPC call in flight now on each side (0 with none): a call stuck behind a partition, a paused peer or a slow disk; /rpcz lists them', ['side'], (g) => {
      for (const [side, conns] of sides()) if (conns) g.set({ side }, conns.reduce((m, c) => Math.max(m, c.inFlight[0]?.elapsedMs ?? 0), 0) / 1000);
    });
  }

  histogram(name: string, help: string, buckets?: number[], labelNames: readonly string[] = []): Histogram<string> {
    return this.existing<Histogram<string>>(name) ?? new Histogram({ name, help, labelNames, registers: [this.registry], ...(buckets ? { buckets } : {}) });
  }

  async json(): Promise<unknown[]> {
    return (await this.registry.getMetricsAsJSON()) as unknown[];
  }

  prometheus(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
