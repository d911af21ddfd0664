/**
 * A replica's ring of applies (tserver/tablet/apply-lag-log.ts), which /api/v1/txn-applies serves:
 * the newest APPLY_LAG_RECORDS_MAX, oldest first, filtered by when the apply finished.
 */
import { describe, expect, it } from 'vitest';
import { htFrom } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { APPLY_LAG_RECORDS_MAX, ApplyLagLog, summarizeApplies } from '../../tserver/tablet/apply-lag-log';

describe('apply lag log', () => {
  const id = TxnId('5f1e0c6a9b2d4e7f8a0b1c2d3e4f5a6b');

  it('apply lag log: records come back oldest first, from the given apply time on, with their lag', () => {
    const log = new ApplyLagLog();
    for (let i = 0; i < 10; i++) log.record(id, htFrom(1_000_000 + i * 1000), 1_000_000 + i * 1000 + 2500);
    expect(log.since(0).map((r) => r.appliedMicros)).toEqual(Array.from({ length: 10 }, (_, i) => 1_002_500 + i * 1000));
    expect(log.since(1_007_500).map((r) => r.appliedMicros)).toEqual([1_007_500, 1_008_500, 1_009_500, 1_010_500, 1_011_500]);
    expect(log.since(2_000_000)).toEqual([]);
    expect(log.since(0)[0]!.lagMs).toBe(2.5);
  });

  it('apply lag log: a full ring keeps the newest records, still oldest first', () => {
    const log = new ApplyLagLog();
    const n = APPLY_LAG_RECORDS_MAX + 7;
    for (let i = 0; i < n; i++) log.record(id, htFrom(i), i);
    const all = log.since(0);
    expect(all).toHaveLength(APPLY_LAG_RECORDS_MAX);
    expect(all[0]!.appliedMicros).toBe(7);
    expect(all[all.length - 1]!.appliedMicros).toBe(n - 1);
    expect(all.every((r, k) => k === 0 || r.appliedMicros === all[k - 1]!.appliedMicros + 1)).toBe(true);
    expect(log.since(n - 3).map((r) => r.appliedMicros)).toEqual([n - 3, n - 2, n - 1]);
  });

  it('apply lag log: a summary counts the applies, takes nearest-rank lag percentiles and names the newest apply', () => {
    expect(summarizeApplies([])).toEqual({ applies: 0 });
    const log = new ApplyLagLog();
    // 100 applies with lags 1..100 ms, recorded out of lag order; the newest finished last.
    for (let i = 0; i < 100; i++) {
      const lagMs = ((i * 37) % 100) + 1;
      log.record(id, htFrom(1_000_000 + i), 1_000_000 + i + lagMs * 1000);
    }
    const s = summarizeApplies(log.since(0));
    expect(s).toMatchObject({ applies: 100, p50Ms: 50, p99Ms: 99, maxMs: 100 });
    const newest = log.since(0).reduce((a, b) => (b.appliedMicros > a.appliedMicros ? b : a));
    expect(s.last).toBe(newest);
    expect(summarizeApplies(log.since(0).slice(0, 1))).toMatchObject({ applies: 1, p50Ms: 1, p99Ms: 1, maxMs: 1 });
  });
});
