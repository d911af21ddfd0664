import { expect, it } from 'vitest';
import { cellGcDrops, DEFAULT_CELL_RULES, selectColumnCells, type CellEntry } from '../../docdb/cell-versions';

it('cell model: a column with 40 000 alternating puts and column tombstones is resolved and collected in linear-ish work (no per-put scan of every marker)', () => {
  const own: CellEntry[] = [];
  for (let i = 0; i < 40_000; i++) own.push(i % 2 === 0 ? { kind: 'put', columnId: 1, ht: BigInt(i + 1), writeId: 0, value: `v${i}` } : { kind: 'deleteColumn', columnId: 1, ht: BigInt(i + 1), writeId: 0xffff_fffe });
  // The newest entry (i = 39 999, at 40 000) is a tombstone: nothing shows.
  expect(selectColumnCells(own, DEFAULT_CELL_RULES, { readHt: 50_000n })).toEqual([]);
  // Deleted cells kept: a range ending at 39 998 sees the put at 39 997; the tombstone at 39 996 masks the older ones.
  expect(selectColumnCells(own, { ...DEFAULT_CELL_RULES, versions: 3, keepDeletedCells: 'true' }, { readHt: 50_000n, versions: 3, maxHt: 39_998n }).map((c) => c.value)).toEqual(['v39996']);
  const drops = cellGcDrops(new Map([[1, own]]), [], () => DEFAULT_CELL_RULES, 50_000n);
  expect(drops.size).toBe(own.length);
});
