/**
 * The benchmark's background-activity sampling of long windows (bench/activity.ts): cluster sums from
 * the tservers' /api/v1/tablets, and the pairing of the load generator's per-second counts with what
 * completed around each second.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ActivitySampler, analyzeSeconds, sampleOf, type ActivitySample } from '../../bench/activity';
import { renderSlowSeconds, type VsRun } from '../../bench/vs-report';

const bg = (flushes: number, compactions: number, cpuS = 0) => ({ flushes, compactions, flushCpuSeconds: cpuS, compactionCpuSeconds: cpuS });

describe('bench activity sampling', () => {
  it('sums flushes, compactions, their CPU and the Raft logs\' fdatasyncs over every replica of every tserver, and each tablet\'s highest term once', () => {
    const s = sampleOf(4000, [
      { tablets: [{ tabletId: 'a', term: 3, background: { regulardb: bg(2, 1, 0.01), intentsdb: bg(5, 0, 0.02) }, wal: { fsyncs: 10, syncMs: 40, slowSyncs: 1 } }, { tabletId: 'b', term: 1 }] },
      { tablets: [{ tabletId: 'a', term: 4, background: { regulardb: bg(2, 1, 0.01) }, wal: { fsyncs: 5, syncMs: 10.5, slowSyncs: 0 } }, { tabletId: 'b', term: 1, background: {} }] },
    ]);
    expect(s).toEqual({ atMs: 4000, flushes: 9, compactions: 2, backgroundCpuMs: expect.closeTo(80, 6), terms: 4 + 1, walSyncs: 15, walSyncMs: 50.5, walSlowSyncs: 1 });
  });

  const at = (atMs: number, flushes: number, compactions = 0, terms = 10, backgroundCpuMs = 0, wal: [number, number, number] = [0, 0, 0]): ActivitySample => ({ atMs, flushes, compactions, backgroundCpuMs, terms, walSyncs: wal[0], walSyncMs: wal[1], walSlowSyncs: wal[2] });

  it('gives each second what completed in the sample intervals that overlap it, and lists the slowest seconds first', () => {
    // Samples every 2 s; a flush completed in [2, 4) s and an election in [6, 8) s.
    const samples = [at(0, 0), at(2000, 0), at(4000, 9, 1, 10, 120), at(6000, 9, 1), at(8000, 9, 1, 11)];
    const perSecond = [600, 610, 400, 450, 620, 630, 200, 640];
    const a = analyzeSeconds(perSecond, samples, 3)!;
    expect(a.slowest.map((s) => [s.second, s.ops, s.flushes, s.compactions, s.backgroundCpuMs, s.elections])).toEqual([
      [6, 200, 0, 0, 0, 1],
      [2, 400, 9, 1, 120, 0],
      [3, 450, 9, 1, 120, 0],
    ]);
    // Seconds 2 and 3 lie in the flush's interval; the other 6 do not.
    expect(a.nearFlush).toEqual({ seconds: 2, medianOps: 400 });
    expect(a.noFlush).toEqual({ seconds: 6, medianOps: 610 });
    expect(a.medianOps).toBe(600);
    expect(a.nearSlowSync).toEqual({ seconds: 0, medianOps: 0 });
    expect(a.noSlowSync).toEqual({ seconds: 8, medianOps: 600 });
  });

  it('pairs each second with the Raft log fdatasyncs around it: the slow ones, their mean, and the seconds near one against the rest', () => {
    // 100 syncs of 4 ms in [0, 2) s; 50 syncs, 2 of them slow, 900 ms in all in [2, 4) s; 100 of 3 ms in [4, 6) s.
    const samples = [at(0, 0, 0, 10, 0, [0, 0, 0]), at(2000, 0, 0, 10, 0, [100, 400, 0]), at(4000, 0, 0, 10, 0, [150, 1300, 2]), at(6000, 0, 0, 10, 0, [250, 1600, 2])];
    const a = analyzeSeconds([700, 690, 300, 420, 710, 705], samples, 2)!;
    expect(a.slowest.map((s) => [s.second, s.walSyncs, s.walSyncMs, s.walSlowSyncs])).toEqual([
      [2, 50, 900, 2],
      [3, 50, 900, 2],
    ]);
    expect(a.nearSlowSync).toEqual({ seconds: 2, medianOps: 300 });
    expect(a.noSlowSync).toEqual({ seconds: 4, medianOps: 700 });
    expect(a.walSlowSyncs).toBe(2);
    expect(a.walSyncMeanMs).toBeCloseTo(1600 / 250, 6);
  });

  it('samples written before the fdatasync fields existed count no fdatasyncs', () => {
    const old = (atMs: number, flushes: number) => ({ atMs, flushes, compactions: 0, backgroundCpuMs: 0, terms: 1 }) as unknown as ActivitySample;
    const a = analyzeSeconds([100, 100], [old(0, 0), old(2000, 1)], 5)!;
    expect(a.slowest.every((s) => s.walSyncs === 0 && s.walSyncMs === 0 && s.walSlowSyncs === 0)).toBe(true);
    expect(a.walSyncMeanMs).toBe(0);
  });

  it('a second on the border of two intervals gets both; seconds no interval covers are left out', () => {
    const samples = [at(500, 0), at(1500, 2), at(2500, 2)];
    const a = analyzeSeconds([100, 200, 300, 400], samples, 10)!;
    // Second 0 overlaps [0.5, 1.5); second 1 overlaps both intervals; second 2 overlaps [1.5, 2.5); second 3 none.
    expect(a.slowest.map((s) => [s.second, s.flushes])).toEqual([
      [0, 2],
      [1, 2],
      [2, 0],
    ]);
  });

  it('counters that went down (a replica reopened) count as nothing, not as negative work', () => {
    const a = analyzeSeconds([100, 100], [at(0, 50, 5), at(2000, 3, 1)], 5)!;
    expect(a.slowest.every((s) => s.flushes === 0 && s.compactions === 0)).toBe(true);
  });

  it('nothing to pair: no analysis', () => {
    expect(analyzeSeconds([100, 200], [at(0, 0)])).toBeUndefined();
    expect(analyzeSeconds([], [at(0, 0), at(2000, 1)])).toBeUndefined();
    expect(analyzeSeconds([100], [at(5000, 0), at(7000, 1)])).toBeUndefined();
  });

  it('the report lists the slowest seconds of tessera\'s long windows only', () => {
    const run = (system: 'tessera' | 'etcd', activity?: VsRun['activity']): VsRun => ({
      round: 1,
      workload: 'txn2-c64',
      system,
      ops: 3000,
      errors: 0,
      seconds: 4,
      opsPerSec: 750,
      p50Ms: 1,
      p99Ms: 2,
      perSecond: [800, 300, 800, 800],
      ...(activity ? { activity } : {}),
    });
    const samples = [at(0, 0), at(2000, 6, 0, 10, 90, [40, 400, 1]), at(4000, 6, 0, 10, 0, [100, 520, 1])];
    expect(renderSlowSeconds([run('tessera')])).toEqual([]);
    expect(renderSlowSeconds([run('etcd', { samples, failures: 0 })])).toEqual([]);
    const md = renderSlowSeconds([run('tessera', { samples, failures: 0 })]).join('\n');
    expect(md).toContain('| txn2-c64 round 1 | 1 | 300 | 38 % | 6 / 0 | 90 | 1 / 10.0 | 0 |');
    expect(md).toContain('| txn2-c64 round 1: seconds near a memtable flush / the rest | 2 / 2 | median 300 / 800 |');
    expect(md).toContain('| txn2-c64 round 1: seconds near a fdatasync ≥ 100 ms / the rest | 2 / 2 | median 300 / 800 | 38 % / 100 % | | | whole window: 1 / 5.2 | |');
    // A group without seconds shows a dash, not a median of 0.
    const quiet = renderSlowSeconds([run('tessera', { samples: [at(0, 0), at(2000, 0), at(4000, 0)], failures: 0 })]).join('\n');
    expect(quiet).toContain('| txn2-c64 round 1: seconds near a fdatasync ≥ 100 ms / the rest | 0 / 4 | median – / 800 | – / 100 % |');
  });

  it('the sampler reads every console at the start, on every tick while the window runs, and once more at the end', async () => {
    // Two fake consoles whose one tablet flushes once per read.
    const reads = [0, 0];
    const servers = await Promise.all(
      reads.map(
        (_, i) =>
          new Promise<http.Server>((resolve) => {
            const srv = http.createServer((req, res) => {
              expect(req.url).toBe('/api/v1/tablets');
              reads[i]!++;
              res.setHeader('content-type', 'application/json');
              res.end(JSON.stringify({ tablets: [{ tabletId: 't', term: 2, background: { regulardb: bg(reads[i]!, 0) } }] }));
            });
            srv.listen(0, '127.0.0.1', () => resolve(srv));
          }),
      ),
    );
    const sampler = new ActivitySampler(
      servers.map((s) => `127.0.0.1:${(s.address() as AddressInfo).port}`),
      Date.now(),
      250, // also each read's timeout: long enough for a loaded machine, and the test waits on the reads anyway
    );
    try {
      sampler.start();
      // The first read and at least two ticks on both consoles (a loaded machine runs ticks late).
      for (let i = 0; i < 4_000 && Math.min(...reads) < 3; i++) await new Promise((r) => setTimeout(r, 5));
      const { samples, failures } = await sampler.stop();
      expect(failures).toBe(0);
      expect(samples.length).toBeGreaterThanOrEqual(4);
      // In time order, each sample one read further on both consoles: the flush count grows by 2 each time.
      samples.forEach((s, k) => {
        expect(s.flushes).toBe(2 * (k + 1));
        expect(s.terms).toBe(2);
        if (k > 0) expect(s.atMs).toBeGreaterThanOrEqual(samples[k - 1]!.atMs);
      });
      expect(reads).toEqual([samples.length, samples.length]);
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
  });

  it('a console that does not answer is a gap, counted, not a failed run', async () => {
    const sampler = new ActivitySampler(['127.0.0.1:1'], Date.now(), 20);
    sampler.start();
    await new Promise((r) => setTimeout(r, 60)); // the scenario: a few ticks pass
    const { samples, failures } = await sampler.stop();
    expect(samples).toEqual([]);
    expect(failures).toBeGreaterThanOrEqual(2);
  });
});
