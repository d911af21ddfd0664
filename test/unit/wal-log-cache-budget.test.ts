import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { silentLogger } from '../../common/log';
import type { Entry } from '../../raft/types';
import { EntryCache } from '../../raft/wal/entry-cache';
import { FileLogStorage } from '../../raft/wal/file-log-storage';
import { ENTRY_OVERHEAD_BYTES } from '../../raft/wal/log-bounds';
import { LogCacheBudget } from '../../raft/wal/log-cache-budget';

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-log-budget-test-'));
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));

/** An entry whose cache footprint is exactly `bytes` (payload + the fixed overhead). */
function sized(index: number, bytes: number): Entry {
  return { term: 1, index, type: 'normal', data: new Uint8Array(bytes - ENTRY_OVERHEAD_BYTES).fill(index & 0xff) };
}

function fill(c: EntryCache, from: number, n: number, bytes: number): void {
  c.append(Array.from({ length: n }, (_, k) => sized(from + k, bytes)));
}

describe('LogCacheBudget: the log caches of all tablets of a server within one budget', () => {
  it('without pressure nothing is evicted and the budget counts every cache', () => {
    const budget = new LogCacheBudget(() => 10_000);
    const a = new EntryCache(1 << 20, 1, budget);
    const b = new EntryCache(1 << 20, 1, budget);
    fill(a, 1, 10, 100);
    fill(b, 1, 20, 100);
    expect(budget.cachedBytes()).toBe(3000);
    expect(a.cachedBytes() + b.cachedBytes()).toBe(3000);
    expect(budget.evicted()).toBe(0);
  });

  it('over the budget the largest cache loses its oldest entries first; the small one keeps all', () => {
    const budget = new LogCacheBudget(() => 3200);
    const big = new EntryCache(1 << 20, 1, budget);
    const small = new EntryCache(1 << 20, 1, budget);
    fill(small, 1, 5, 100); // 500
    fill(big, 1, 25, 100); // 2,500: total 3,000, within
    expect(budget.evicted()).toBe(0);
    fill(small, 6, 5, 100); // 1,000 + 2,500 = 3,500 > 3,200: the big one (not the appender) shrinks
    // Down to a sixteenth below the limit (3,000): 500 evicted, all from the big cache, oldest first.
    expect(budget.cachedBytes()).toBeLessThanOrEqual(3200 - 3200 / 16);
    expect(small.cachedBytes()).toBe(1000);
    expect(small.startIndex()).toBe(1);
    expect(big.cachedBytes()).toBe(2000);
    expect(big.startIndex()).toBe(6);
    expect(big.get(5)).toBeUndefined();
    expect(big.get(6)!.index).toBe(6);
    expect(big.get(25)!.index).toBe(25);
    expect(budget.evicted()).toBe(500);
  });

  it('spreads a large excess over the big caches: cut down to a common level', () => {
    const budget = new LogCacheBudget(() => 1600);
    const caches = [new EntryCache(1 << 20, 1, budget), new EntryCache(1 << 20, 1, budget), new EntryCache(1 << 20, 1, budget)];
    fill(caches[0]!, 1, 8, 100); // 800
    fill(caches[1]!, 1, 6, 100); // 600
    fill(caches[2]!, 1, 20, 100); // 2,000: total 3,400 → 1,500, every cache cut to 500
    expect(budget.cachedBytes()).toBe(1500);
    expect(caches.map((c) => c.cachedBytes())).toEqual([500, 500, 500]);
    for (const c of caches) if (c.size() > 0) expect(c.get(c.startIndex() + c.size() - 1)).toBeDefined();
  });

  it('a runtime change of the limit applies at the next append; 0 keeps nothing cached', () => {
    let limit = 1_000_000;
    const budget = new LogCacheBudget(() => limit);
    const a = new EntryCache(1 << 20, 1, budget);
    fill(a, 1, 10, 1000);
    expect(a.cachedBytes()).toBe(10_000);
    limit = 0;
    fill(a, 11, 1, 1000);
    expect(a.cachedBytes()).toBe(0);
    expect(a.startIndex()).toBe(12);
    expect(budget.evicted()).toBe(11_000);
  });

  it('a released (closed) cache gives its bytes back and is no longer a candidate', () => {
    const budget = new LogCacheBudget(() => 2000);
    const a = new EntryCache(1 << 20, 1, budget);
    const b = new EntryCache(1 << 20, 1, budget);
    fill(a, 1, 15, 100);
    a.release();
    expect(budget.cachedBytes()).toBe(0);
    fill(b, 1, 19, 100);
    expect(b.cachedBytes()).toBe(1900);
    expect(budget.evicted()).toBe(0);
  });

  it('per-tablet limit, truncation by a new leader and compaction keep the budget exact', () => {
    const budget = new LogCacheBudget(() => 1 << 30);
    const a = new EntryCache(1000, 1, budget);
    fill(a, 1, 15, 100); // per-tablet limit 1,000: keeps 6..15
    expect(a.cachedBytes()).toBe(1000);
    a.append([sized(12, 300)]); // replaces 12..15 (400) by one entry of 300
    expect(a.cachedBytes()).toBe(900);
    a.compactTo(9); // drops 6..9
    expect(a.cachedBytes()).toBe(500);
    expect(budget.cachedBytes()).toBe(a.cachedBytes());
    a.reset(100);
    expect(budget.cachedBytes()).toBe(0);
  });

  it('FileLogStorage: tablets sharing a budget stay within it and still read every entry (from the files)', async () => {
    const budget = new LogCacheBudget(() => 64 * 1024);
    const logs = await Promise.all([0, 1, 2].map((i) => FileLogStorage.open(path.join(ROOT, `t${i}`), { logger: silentLogger(), cacheBudget: budget })));
    try {
      for (let round = 0; round < 20; round++) {
        for (const [i, log] of logs.entries()) {
          const from = log.lastIndex() + 1;
          log.append(Array.from({ length: 4 }, (_, k) => ({ term: 1, index: from + k, type: 'normal' as const, data: Buffer.alloc(1000 * (i + 1), from + k) })));
          await log.sync();
        }
      }
      const cached = logs.map((l) => l.stats().cacheBytes);
      expect(cached.reduce((x, y) => x + y, 0)).toBe(budget.cachedBytes());
      expect(budget.cachedBytes()).toBeLessThanOrEqual(64 * 1024);
      expect(budget.evicted()).toBeGreaterThan(0);
      for (const [i, log] of logs.entries()) {
        const all = log.entries(1, log.lastIndex() + 1);
        expect(all).toHaveLength(80);
        all.forEach((e, k) => {
          expect(e.index).toBe(k + 1);
          expect(e.data.byteLength).toBe(1000 * (i + 1));
          expect(e.data[0]).toBe((k + 1) & 0xff);
        });
      }
    } finally {
      for (const l of logs) await l.close();
    }
    expect(budget.cachedBytes()).toBe(0);
  });
});
