/**
 * BenchCluster's readings of its servers' logs, on log files written by the test (no servers): the
 * leadership changes counted in a window, and the wait for leadership to go quiet before a benchmark
 * starts (a leader-balancing move must not be counted as an election under load).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BenchCluster } from '../../bench/bench-cluster';

const clusters: BenchCluster[] = [];
afterEach(async () => {
  for (const c of clusters.splice(0)) await c.stop();
});

function cluster(): BenchCluster {
  const c = new BenchCluster();
  clusters.push(c);
  return c;
}

function logLine(file: string, c: BenchCluster, time: number, msg: string): void {
  fs.appendFileSync(path.join(c.baseDir, file), `${JSON.stringify({ level: 30, time, name: 'x', msg })}\n`);
}

describe('BenchCluster log readings', () => {
  it('counts "became leader" lines of tservers inside the window only, and skips a torn line', () => {
    const c = cluster();
    logLine('tserver-127.0.0.1:9100.log', c, 1_000, 'became leader');
    logLine('tserver-127.0.0.1:9100.log', c, 2_000, 'became leader');
    logLine('tserver-127.0.0.2:9100.log', c, 2_500, 'became leader');
    logLine('tserver-127.0.0.2:9100.log', c, 2_600, 'following a new leader');
    logLine('master-127.0.0.1:7100.log', c, 2_000, 'became leader');
    fs.appendFileSync(path.join(c.baseDir, 'tserver-127.0.0.2:9100.log'), '{"level":30,"time":2700,"msg":"became lea');
    expect(c.leaderChangesBetween(0)).toBe(3);
    expect(c.leaderChangesBetween(1_500, 2_500)).toBe(2);
    expect(c.leaderChangesBetween(3_000)).toBe(0);
  });

  it('waitLeadersSettled returns once the last leadership change or balancing move is quietMs old', async () => {
    const c = cluster();
    const now = Date.now();
    logLine('tserver-127.0.0.1:9100.log', c, now - 10_000, 'became leader');
    // A balancing move logged by the master just now: the wait must cover quietMs from it.
    logLine('master-127.0.0.1:7100.log', c, now, 'balancing leaders: moving a tablet leader');
    const r = await c.waitLeadersSettled(400, 5_000);
    expect(r.settled).toBe(true);
    expect(Date.now() - now).toBeGreaterThanOrEqual(400);
  });

  it('waitLeadersSettled gives up after maxMs while leaders keep moving, and says so', async () => {
    const c = cluster();
    logLine('tserver-127.0.0.3:9100.log', c, Date.now(), 'became leader');
    const timer = setInterval(() => logLine('tserver-127.0.0.3:9100.log', c, Date.now(), 'became leader'), 50);
    try {
      const r = await c.waitLeadersSettled(300, 800);
      expect(r.settled).toBe(false);
      expect(r.waitedMs).toBeGreaterThanOrEqual(800);
    } finally {
      clearInterval(timer);
    }
  });

  it('waitLeadersSettled answers at once when no server logged a change', async () => {
    const c = cluster();
    logLine('tserver-127.0.0.1:9100.log', c, Date.now(), 'following a new leader');
    // Waiting for 60 s of quiet would outlast the test's own timeout: only answering at once passes.
    const r = await c.waitLeadersSettled(60_000, 60_000);
    expect(r).toEqual({ waitedMs: expect.any(Number), settled: true });
  });
});
