/**
 * The DocDB storage benchmark runs end to end on a small row count (a smoke run: it works and its
 * figures are real measurements, never asserting speed). Its small-transaction case checks itself
 * that every one-row transaction was applied in its APPLY batch and that no intent is left.
 */
import { describe, expect, it } from 'vitest';
import { runStorageBench } from '../../bench/docdb-storage-bench';

describe('bench: docdb storage (smoke)', () => {
  it('bench docdb storage: 2,000 rows through writes, reads, scan, a big apply and the small-transaction path; every figure is a positive finite number', async () => {
    const lines: string[] = [];
    const f = await runStorageBench(2_000, (l) => lines.push(l));
    for (const v of [f.writeRowsPerSec, f.pointReadsPerSec, f.scanRowsPerSec, f.applyRowsPerSec, f.small.plainCpuUsPerRow, f.small.txnCpuUsPerRow]) {
      expect(Number.isFinite(v) && v > 0, String(v)).toBe(true);
    }
    expect(f.small.rows).toBe(2_000);
    expect(lines.some((l) => l.startsWith('small transactions (2000 one-row txns, 8 per group, applied 4 groups later)'))).toBe(true);
  }, 60_000);
});
