/**
 * The benchmark's cost-per-operation counting (bench/io-costs.ts): Prometheus text from the tservers
 * is summed into named counters, the change over a window is divided by the operations completed, and
 * the report shows one column per tessera workload.
 */
import { describe, expect, it } from 'vitest';
import { costPerOp, counterDelta, parseCounters, parseLoopDelay, sortCostKeys, worstLoopDelay } from '../../bench/io-costs';
import { aggregate, renderCosts, type VsRun } from '../../bench/vs-report';

const scrape = (writes: number, intentPuts: number, syncedRegular: number): string =>
  [
    '# HELP tserver_rpc_ops_total Tablet server RPCs handled',
    '# TYPE tserver_rpc_ops_total counter',
    `tserver_rpc_ops_total{method="Write",server="tserver"} ${writes}`,
    'tserver_rpc_ops_total{method="CommitTransaction",server="tserver"} 5',
    'tserver_raft_messages{direction="sent",server="tserver"} 40',
    'tserver_raft_messages{direction="received",server="tserver"} 39',
    `tserver_docdb_write_ops{tablet_id="a",db="intentsdb",op="put",server="tserver"} ${intentPuts}`,
    `tserver_docdb_write_ops{tablet_id="b",db="intentsdb",op="put",server="tserver"} ${intentPuts}`,
    'tserver_docdb_write_ops{tablet_id="a",db="regulardb",op="del_range",server="tserver"} 1',
    `tserver_docdb_write_batches{tablet_id="a",db="regulardb",synced="true",server="tserver"} ${syncedRegular}`,
    'tserver_docdb_write_batches{tablet_id="a",db="regulardb",synced="false",server="tserver"} 7',
    'tserver_log_fsyncs{tablet_id="a",server="tserver"} 12',
    'tserver_raft_early{tablet_id="a",kind="applied_entries",server="tserver"} 6',
    'tserver_raft_early{tablet_id="b",kind="applied_saved_ms",server="tserver"} 21',
    'tserver_raft_early{tablet_id="a",kind="sends",server="tserver"} 2',
    'tserver_raft_early{tablet_id="a",kind="unknown",server="tserver"} 99',
    'tserver_raft_apply{tablet_id="a",kind="entries",server="tserver"} 30',
    'tserver_raft_apply{tablet_id="b",kind="run_ms",server="tserver"} 45',
    'tserver_raft_apply{tablet_id="a",kind="unknown",server="tserver"} 7',
    'nodejs_heap_size_total_bytes{server="tserver"} 123456',
    'nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor",server="tserver"} 3',
    'nodejs_gc_duration_seconds_sum{kind="minor",server="tserver"} 0.25',
    'nodejs_gc_duration_seconds_count{kind="minor",server="tserver"} 40',
    'nodejs_gc_duration_seconds_sum{kind="major",server="tserver"} 0.125',
    'tserver_rocksdb_background{tablet_id="a",db="regulardb",kind="flushes",server="tserver"} 3',
    'tserver_rocksdb_background{tablet_id="b",db="regulardb",kind="flushes",server="tserver"} 2',
    'tserver_rocksdb_background{tablet_id="a",db="intentsdb",kind="compaction_cpu_seconds",server="tserver"} 0.5',
    'tserver_rocksdb_background{tablet_id="a",db="intentsdb",kind="stall_seconds",server="tserver"} 0.01',
    'tserver_rocksdb_background{tablet_id="a",db="intentsdb",kind="compaction_seconds",server="tserver"} 9',
    'garbage line {',
  ].join('\n');

describe('bench io-costs', () => {
  it('sums the series of our metrics over tablets and servers, by the labels that name them', () => {
    const c = parseCounters(scrape(10, 3, 2));
    parseCounters(scrape(20, 4, 1), c);
    expect(c.get('RPCs: Write')).toBe(30);
    expect(c.get('RPCs: CommitTransaction')).toBe(10);
    expect(c.get('Raft messages sent')).toBe(80); // "received" is left out: it would count each message twice
    expect(c.get('IntentsDB puts')).toBe(2 * 3 + 2 * 4);
    expect(c.get('RegularDB range deletes')).toBe(2);
    expect(c.get('RegularDB write batches, synced')).toBe(3);
    expect(c.get('RegularDB write batches')).toBe(14);
    expect(c.get('Raft log fsyncs')).toBe(24);
    expect(c.get('Raft entries applied while a log sync ran')).toBe(12);
    expect(c.get('Raft: ms those applies came sooner (summed)')).toBe(42);
    expect(c.get('Raft sends while a log sync ran')).toBe(4);
    expect([...c.keys()].filter((k) => k.includes('while a log sync') || k.includes('came sooner'))).toHaveLength(3);
    expect(c.get('Raft apply stage: entries applied')).toBe(60);
    expect(c.get('Raft apply stage: ms calls ran (summed)')).toBe(90);
    expect([...c.keys()].filter((k) => k.startsWith('Raft apply stage'))).toHaveLength(2);
    expect([...c.keys()].some((k) => k.includes('heap'))).toBe(false);
    // GC pauses: seconds become milliseconds, counts stay counts; histogram buckets are left out.
    expect(c.get('GC pause ms, main thread: minor')).toBe(500);
    expect(c.get('GC pause ms, main thread: major')).toBe(250);
    expect(c.get('GC pauses: minor')).toBe(80);
    expect([...c.keys()].filter((k) => k.startsWith('GC'))).toHaveLength(3);
    // RocksDB's background work: per database, summed over tablets and servers; seconds become ms;
    // wall seconds of the jobs are left out (CPU is what the cost table compares).
    expect(c.get('RocksDB RegularDB: memtable flushes')).toBe(10);
    expect(c.get('RocksDB IntentsDB: compaction CPU ms')).toBe(1000);
    expect(c.get('RocksDB IntentsDB: write stall ms')).toBe(20);
    expect([...c.keys()].filter((k) => k.startsWith('RocksDB'))).toHaveLength(3);
  });

  it('divides the change over the windows by the operations completed, and drops counters that did not move', () => {
    const before = parseCounters(scrape(10, 3, 2));
    const after = parseCounters(scrape(50, 13, 2));
    const d = counterDelta(before, after);
    expect(d['RPCs: Write']).toBe(40);
    expect(d['IntentsDB puts']).toBe(20);
    const cost = costPerOp([
      { ops: 10, counters: d },
      { ops: 30, counters: { 'RPCs: Write': 40, 'IntentsDB puts': 0 } },
    ]);
    expect(cost).toEqual({ 'RPCs: Write': 2, 'IntentsDB puts': 0.5 });
    expect(Object.keys(cost!)).not.toContain('Raft log fsyncs');
    // A run without counters: no figure rather than one over part of the operations.
    expect(costPerOp([{ ops: 10, counters: d }, { ops: 10 }])).toBeUndefined();
    expect(costPerOp([{ ops: 0, counters: d }])).toBeUndefined();
  });

  it('orders RPCs, then Raft, then the databases, then garbage collection', () => {
    expect(sortCostKeys(['GC pauses: minor', 'RegularDB puts', 'Raft log fsyncs', 'RPCs: Write', 'IntentsDB puts', 'RPCs: CreateTransaction'])).toEqual([
      'RPCs: CreateTransaction',
      'RPCs: Write',
      'Raft log fsyncs',
      'IntentsDB puts',
      'RegularDB puts',
      'GC pauses: minor',
    ]);
  });

  it('the report has one column per tessera workload with counters, a dash where one has none', () => {
    const run = (workload: string, ops: number, counters: Record<string, number>): VsRun => ({ round: 1, workload, system: 'tessera', ops, errors: 0, seconds: 5, opsPerSec: ops / 5, p50Ms: 1, p99Ms: 2, counters });
    const rows = aggregate(['put-c64', 'txn2-c64'], [run('put-c64', 100, { 'RPCs: Write': 25 }), run('txn2-c64', 10, { 'RPCs: Write': 20, 'IntentsDB puts': 430 })]);
    const md = renderCosts(rows).join('\n');
    expect(md).toContain('| tessera, whole cluster, per completed operation | put-c64 | txn2-c64 |');
    expect(md).toContain('| RPCs: Write | 0.25 | 2.00 |');
    expect(md).toContain('| IntentsDB puts | – | 43.0 |');
    expect(renderCosts(aggregate(['put-c64'], [{ ...run('put-c64', 1, {}), counters: undefined }]))).toEqual([]);
  });

  it('reads the event-loop delay of a scrape without the monitor\'s 100 ms period, and the worst of several servers', () => {
    const text = (p50: number, p99: number, max: number, labels = '{server="tserver"}'): string =>
      ['# HELP nodejs_eventloop_lag_p99_seconds The 99th percentile of the recorded event loop delays.', `nodejs_eventloop_lag_p50_seconds${labels} ${p50}`, `nodejs_eventloop_lag_p99_seconds${labels} ${p99}`, `nodejs_eventloop_lag_max_seconds${labels} ${max}`, 'nodejs_eventloop_lag_mean_seconds 0.5'].join('\n');
    const a = parseLoopDelay(text(0.1017, 0.128, 0.1359));
    expect(a?.p50Ms).toBeCloseTo(1.7);
    expect(a?.p99Ms).toBeCloseTo(28);
    expect(a?.maxMs).toBeCloseTo(35.9);
    // No labels, and a timer that fired early (never below 0).
    expect(parseLoopDelay(text(0.0999, 0.1, 0.2, ''))).toEqual({ p50Ms: 0, p99Ms: 0, maxMs: 100 });
    expect(parseLoopDelay('tserver_log_fsyncs{tablet_id="a"} 3')).toBeUndefined();
    expect(worstLoopDelay([{ p50Ms: 1, p99Ms: 30, maxMs: 40 }, undefined, { p50Ms: 2, p99Ms: 10, maxMs: 60 }])).toEqual({ p50Ms: 2, p99Ms: 30, maxMs: 60 });
    expect(worstLoopDelay([undefined])).toBeUndefined();
  });
});
