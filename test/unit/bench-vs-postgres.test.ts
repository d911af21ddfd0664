import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { latencyPercentilesMs, parseInitDoneSeconds, parseLogLatenciesUs, parsePgbenchSummary, percentile } from '../../bench/pgbench-output';
import { findPostgresBin } from '../../bench/postgres-local';
import { parseVsPostgresArgs, renderCpuTable, summarizeRuns, type PgbenchRun } from '../../bench/vs-postgres';
import { childCount, readCpu, runCpu, settleChildren, treeCpuSeconds } from '../../bench/pg-cpu';
import { spawn } from 'node:child_process';
import { vsTarget } from '../../bench/vs';

// pgbench 15's summary of `-N --max-tries=20` (stdout), as it prints it.
const SUMMARY = `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: simple update>
scaling factor: 1
query mode: simple
number of clients: 16
number of threads: 2
maximum number of tries: 20
duration: 5 s
number of transactions actually processed: 812
number of failed transactions: 3 (0.368%)
number of transactions retried: 41 (5.030%)
total number of retries: 57
latency average = 98.123 ms
initial connection time = 12.345 ms
tps = 162.812345 (without initial connection time)
`;

describe('pgbench output', () => {
  it('reads tps, latency average, processed, failed and retried transactions', () => {
    expect(parsePgbenchSummary(SUMMARY)).toEqual({ tps: 162.812345, latencyAverageMs: 98.123, transactions: 812, failed: 3, retried: 41 });
  });

  it('counts no failures or retries when pgbench prints none (no --max-tries)', () => {
    const s = parsePgbenchSummary(SUMMARY.replace(/^number of (failed|transactions retried).*\n/gm, ''));
    expect(s.failed).toBe(0);
    expect(s.retried).toBe(0);
    expect(s.tps).toBeCloseTo(162.81, 2);
  });

  it('says what pgbench printed when there is no tps line', () => {
    expect(() => parsePgbenchSummary('pgbench: error: connection to server failed\n')).toThrow(/no "tps = " line: pgbench: error: connection/);
  });

  it("reads -i's done-in seconds", () => {
    expect(parseInitDoneSeconds('dropping old tables...\ndone in 240.12 s (drop tables 0.00 s, create tables 0.31 s, client-side generate 105.2 s, vacuum 2.1 s, primary keys 122.5 s).\n')).toBe(240.12);
    expect(parseInitDoneSeconds('creating tables...\n')).toBeUndefined();
  });
});

describe('pgbench -l logs', () => {
  // client_id transaction_no time script_no time_epoch time_us [retries]; failed transactions say so.
  const LOG = ['0 0 1500 0 1733480000 123456 0', '0 1 2500 0 1733480000 223456 2', '1 0 failed 0 1733480001 1000 19', '1 1 serialization 0 1733480001 2000 3', '1 2 500 0 1733480001 3000 0', ''].join('\n');

  it('keeps the latency (µs) of completed transactions only', () => {
    expect(parseLogLatenciesUs(LOG)).toEqual([1500, 2500, 500]);
  });

  it('takes p50/p99 over every thread log, in ms', () => {
    const other = Array.from({ length: 97 }, (_, i) => `2 ${i} ${(i + 1) * 1000} 0 1733480002 0`).join('\n');
    const r = latencyPercentilesMs([LOG, other]);
    expect(r.count).toBe(100);
    // 100 values: 500, 1000, 1500, 2000, 2500, 3000 … 97000 µs; nearest rank.
    expect(r.p50Ms).toBe(47);
    expect(r.p99Ms).toBe(96);
  });

  it('nearest-rank percentile; NaN when there is nothing', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    expect(percentile([], 50)).toBeNaN();
  });
});

describe('bench --vs postgres options and summary', () => {
  it('parses the options, with the issue defaults', () => {
    expect(parseVsPostgresArgs(['--vs', 'postgres'])).toMatchObject({ scale: 10, clients: [1, 16, 64], seconds: 10, rounds: 3, blog: true });
    expect(parseVsPostgresArgs(['--vs=postgres', '--scale', '1', '--clients=1,16', '--seconds', '5', '--rounds', '1', '--no-blog'])).toMatchObject({ scale: 1, clients: [1, 16], seconds: 5, rounds: 1, blog: false });
    expect(() => parseVsPostgresArgs(['--vs', 'postgres', '--clients', '1,x'])).toThrow(/--clients needs a whole number/);
    expect(() => parseVsPostgresArgs(['--vs', 'postgres', '--workloads', 'a'])).toThrow(/unknown option '--workloads'/);
  });

  it('tells which side-by-side benchmark is asked for', () => {
    expect(vsTarget(['--seconds', '3', '--vs', 'postgres'])).toBe('postgres');
    expect(vsTarget(['--vs=etcd'])).toBe('etcd');
    expect(vsTarget(['load'])).toBeUndefined();
  });

  it('summarizes rounds: median tps and ratio per round pair, failures summed', () => {
    const run = (system: PgbenchRun['system'], round: number, tps: number, failed = 0): PgbenchRun => ({ system, workload: 'select', clients: 16, round, tps, latencyAverageMs: 1, p50Ms: 1, p99Ms: 2, transactions: 10, failed, retried: 0, cpu: {} });
    const [row] = summarizeRuns([run('tessera', 1, 100, 1), run('postgres', 1, 400), run('tessera', 2, 300, 2), run('postgres', 2, 600), run('tessera', 3, 200), run('postgres', 3, 1000)]);
    expect(row?.tessera.tps).toBe(200);
    expect(row?.postgres.tps).toBe(600);
    expect(row?.ratio).toBe(0.25); // per round 0.25, 0.5, 0.2
    expect(row?.tessera.failed).toBe(3);
  });
});

describe('CPU per transaction', () => {
  it("splits tessera's CPU into node 0, the other tservers' mean and the SQL layer's estimate", () => {
    const before = { tservers: [10, 20, 30], postgres: undefined };
    const after = { tservers: [13, 21, 31.5], postgres: undefined };
    // 1,000 transactions: node 0 3 s, others 1 s and 1.5 s (mean 1.25 s).
    expect(runCpu('tessera', before, after, 1000)).toEqual({ tesseraUs: 5500, endpointUs: 3000, tabletNodeUs: 1250, sqlLayerUs: 1750 });
    expect(runCpu('postgres', { tservers: [], postgres: 5 }, { tservers: [], postgres: 7 }, 4000)).toEqual({ postgresUs: 500 });
  });

  it('gives nothing it cannot read, or for a run without transactions', () => {
    expect(runCpu('tessera', { tservers: [1, undefined], postgres: 1 }, { tservers: [2, 3], postgres: 2 }, 10)).toEqual({});
    expect(runCpu('tessera', { tservers: [1, 1], postgres: 1 }, { tservers: [2, 2], postgres: 2 }, 0)).toEqual({});
    expect(runCpu('postgres', { tservers: [], postgres: undefined }, { tservers: [], postgres: 2 }, 10)).toEqual({});
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))('reads a process tree from /proc: at least the process itself, growing as it works (skipped: no /proc here)', () => {
    const a = treeCpuSeconds(process.pid)!;
    let x = 0;
    for (const end = process.cpuUsage().user + 30_000; process.cpuUsage().user < end; ) x += Math.sqrt(x + 1);
    const b = treeCpuSeconds(process.pid)!;
    expect(x).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a);
    expect(b).toBeGreaterThanOrEqual(process.cpuUsage().user / 1e6 - 0.05);
    expect(treeCpuSeconds(2 ** 22 + 12345)).toBeUndefined();
    expect(readCpu([process.pid], undefined).tservers[0]).toBeGreaterThan(0);
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))("waits for a run's children to be gone, so their CPU is in the parent's cutime (skipped: no /proc here)", async () => {
    const before = childCount(process.pid);
    const child = spawn(process.execPath, ['-e', 'let x = 0; for (const end = Date.now() + 150; Date.now() < end; ) x++;']);
    expect(childCount(process.pid)).toBe(before + 1);
    await settleChildren(process.pid, before, 30_000);
    expect(childCount(process.pid)).toBe(before);
    expect(child.pid).toBeGreaterThan(0);
  });

  it('reports the medians per workload, the SQL layer per statement (-N: 5 statements)', () => {
    const run = (system: PgbenchRun['system'], round: number, cpu: PgbenchRun['cpu']): PgbenchRun => ({ system, workload: 'simple-update', clients: 1, round, tps: 1, latencyAverageMs: 1, p50Ms: 1, p99Ms: 2, transactions: 10, failed: 0, retried: 0, cpu });
    const rows = summarizeRuns([run('tessera', 1, { tesseraUs: 900, endpointUs: 500, tabletNodeUs: 200, sqlLayerUs: 300 }), run('postgres', 1, { postgresUs: 50 }), run('tessera', 2, { tesseraUs: 1100, endpointUs: 700, tabletNodeUs: 200, sqlLayerUs: 500 }), run('postgres', 2, { postgresUs: 70 })]);
    expect(rows[0]!.cpu).toEqual({ tesseraUs: 1000, endpointUs: 600, tabletNodeUs: 200, sqlLayerUs: 400, postgresUs: 60 });
    const line = renderCpuTable(rows).find((l) => l.startsWith('| -N'));
    expect(line).toBe('| -N simple-update | 1 | 5 | 1,000 | 600 | 200 | 400 | 80 | 60 |');
  });
});

describe('finding PostgreSQL', () => {
  it('takes the first PATH directory holding both initdb and postgres', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbin-'));
    const only = fs.mkdtempSync(path.join(os.tmpdir(), 'pgbin-'));
    try {
      for (const b of ['initdb', 'postgres']) fs.writeFileSync(path.join(dir, b), '');
      fs.writeFileSync(path.join(only, 'initdb'), '');
      expect(findPostgresBin(`${only}:${dir}`)).toBe(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(only, { recursive: true, force: true });
    }
  });
});
