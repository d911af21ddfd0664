/**
 * orderedAhead (client/backup/tablet-scan-ahead.ts): an export's per-tablet scans run ahead into
 * bounded buffers but come out strictly in tablet order; a scan's error reaches the consumer; a
 * consumer that stops early ends the scans running ahead.
 */
import { describe, expect, it } from 'vitest';
import { orderedAhead } from '../../client/backup/tablet-scan-ahead';

describe('backup: scans running ahead', () => {
  it('backup: rows come out in source order, with at most the buffer pulled ahead of the consumer per source', async () => {
    const pulled = [0, 0, 0, 0];
    async function* src(i: number): AsyncGenerator<string> {
      for (let k = 0; k < 50; k++) {
        pulled[i]!++;
        await Promise.resolve();
        yield `${i}:${k}`;
      }
    }
    const out: string[] = [];
    let maxAhead = 0;
    for await (const r of orderedAhead(4, src, 2, 10)) {
      out.push(r);
      if (r.startsWith('0:')) maxAhead = Math.max(maxAhead, pulled[1]!, pulled[2]!);
      expect(pulled[3], 'source 3 is not opened while source 0 is read').toBe(r.startsWith('0:') ? 0 : pulled[3]);
    }
    expect(out).toEqual([0, 1, 2, 3].flatMap((i) => Array.from({ length: 50 }, (_, k) => `${i}:${k}`)));
    expect(maxAhead).toBeGreaterThan(0);
    expect(maxAhead).toBeLessThanOrEqual(11);
  });
  it('backup: an error of a source is thrown in order; stopping early ends the sources running ahead', async () => {
    async function* bad(i: number): AsyncGenerator<number> {
      yield i;
      if (i === 1) throw new Error('tablet 1 failed');
      yield i;
    }
    const got: number[] = [];
    await expect((async () => {
      for await (const r of orderedAhead(3, bad, 2, 5)) got.push(r);
    })()).rejects.toThrow('tablet 1 failed');
    expect(got).toEqual([0, 0, 1]);
    const closed: number[] = [];
    async function* long(i: number): AsyncGenerator<number> {
      try {
        for (let k = 0; k < 1000; k++) yield k;
      } finally {
        closed.push(i);
      }
    }
    for await (const r of orderedAhead(3, long, 2, 4)) if (r === 3) break;
    for (let i = 0; i < 20 && closed.length < 3; i++) await new Promise((res) => setTimeout(res, 5));
    expect(closed.sort()).toEqual([0, 1, 2]);
  });
  it('backup: pages running ahead are bounded by the rows they hold (sizeOf), not by their number', async () => {
    let pulledRows = 0;
    async function* pages(i: number): AsyncGenerator<number[]> {
      for (let k = 0; k < 20; k++) {
        await Promise.resolve();
        pulledRows += i === 1 ? 10 : 0;
        yield Array.from({ length: 10 }, (_, j) => i * 1000 + k * 10 + j);
      }
    }
    const rows: number[] = [];
    let aheadWhileFirst = 0;
    for await (const page of orderedAhead(2, pages, 1, 30, (p) => p.length)) {
      rows.push(...page);
      if (page[0]! < 1000) aheadWhileFirst = Math.max(aheadWhileFirst, pulledRows);
    }
    expect(rows).toEqual([0, 1].flatMap((i) => Array.from({ length: 200 }, (_, j) => i * 1000 + j)));
    // Source 1 ran ahead while source 0 was read, but only up to its 30-row buffer (3 pages of 10).
    expect(aheadWhileFirst).toBeGreaterThan(0);
    expect(aheadWhileFirst).toBeLessThanOrEqual(30);
  });
});
