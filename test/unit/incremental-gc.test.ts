import { expect, it } from 'vitest';
import { htFrom } from '../../common/hybrid-time';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import type { DocKey, RowOp } from '../../docdb/doc-db-api';
import { incrementalGc } from '../../tserver/tablet/incremental-gc';

const S = (s: number): bigint => htFrom(BigInt(s) * 1_000_000n);

it('incremental GC: passes of a few rows collect what one whole pass collects, and a round told to stop ends early', async () => {
  const open = (): Promise<DocDb> => DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
  const key = (i: number): DocKey => ({ hash: i, hashed: [BigInt(i)], range: [] });
  const fill = async (db: DocDb): Promise<void> => {
    for (let v = 0; v < 3; v++) {
      const ops: RowOp[] = Array.from({ length: 25 }, (_, i) => ({ type: 'upsert', key: key(i), columns: [{ columnId: 2, value: `r${i} v${v}` }] }));
      await db.writeRegular(ops, S(10 + v), { term: 1, index: v + 1 });
    }
  };
  const whole = await open();
  const passes = await open();
  const cut = await open();
  try {
    for (const db of [whole, passes, cut]) await fill(db);
    const a = await whole.gc(S(20));
    const b = await incrementalGc(passes, S(20), () => true, 4);
    expect(b).toMatchObject({ versionsScanned: a.versionsScanned, versionsDropped: a.versionsDropped, cutoffHt: S(20) });
    expect(b.versionsDropped).toBe(25 * 4); // per row: two older versions of the column and of the liveness column
    let calls = 0;
    const c = await incrementalGc(cut, S(20), () => ++calls < 2, 4);
    expect(c.versionsDropped).toBe(8 * 4); // two passes of 4 rows, then told to stop
  } finally {
    for (const db of [whole, passes, cut]) await db.close();
  }
});
