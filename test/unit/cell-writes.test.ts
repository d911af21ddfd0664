import { describe, expect, it } from 'vitest';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import { cellRulesOf } from '../../tserver/tablet/cell-schema';
import { parseTabletMeta } from '../../tserver/tablet/tablet-meta';
import { parseFamilySpec } from '../../common/column-families';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { htFrom } from '../../common/hybrid-time';
import type { DocKey } from '../../docdb/doc-db-api';

const S = (s: number): bigint => htFrom(BigInt(s) * 1_000_000n);
const key: DocKey = { hash: 7, hashed: [7n], range: [] };

describe('cell writes', () => {
  it('cell writes: a WRITE entry carrying a cells op decodes to the same op (every kind, with and without a timestamp)', () => {
    const op: TabletOp = {
      type: 'WRITE',
      ht: S(100),
      ops: [
        {
          type: 'cells',
          key,
          cells: [
            { kind: 'put', columnId: 2, value: 'a', ht: S(50), ttlMs: 1500 },
            { kind: 'put', columnId: 3, value: 12n },
            { kind: 'deleteVersion', columnId: 2, ht: S(40) },
            { kind: 'deleteColumn', columnId: 3 },
            { kind: 'deleteColumn', columnId: 2, ht: S(45) },
            { kind: 'deleteRow', ht: S(30) },
            { kind: 'deleteRow' },
          ],
        },
        { type: 'upsert', key, columns: [{ columnId: 2, value: 'plain' }], ttlMs: 9 },
        { type: 'delete', key },
      ],
    };
    expect(decodeTabletOp(encodeTabletOp(op))).toEqual(op);
  });

  it('cell writes: the tablet hands DocDB each column\'s family rules from its schema; a table without families gives none', () => {
    const meta = parseTabletMeta({
      tabletId: 't1',
      tableId: 'x',
      tableName: 't',
      schema: { columns: [{ name: 'id', id: 1, type: 'int64' }, { name: 'v', id: 2, type: 'string', family: 'cf1' }, { name: 'w', id: 3, type: 'string' }], hashColumns: ['id'], families: [parseFamilySpec('cf1:VERSIONS=3,TTL=10,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true')] },
      peers: [{ uuid: 'u', rpcAddress: 'a' }],
    });
    const rules = cellRulesOf(meta)!;
    expect(rules.get(2)).toEqual({ versions: 3, minVersions: 1, ttlSec: 10, keepDeletedCells: 'true' });
    expect(rules.get(3)).toEqual({ versions: 1, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' });
    expect(cellRulesOf({ ...meta, schema: { ...meta.schema, families: undefined } })).toBeUndefined();
  });

  it('cell writes: row reads honour a version delete (the previous version shows) and a family TTL without MIN_VERSIONS', async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    try {
      db.setCellFamilies(new Map([[2, { versions: 3, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' }], [3, { versions: 1, minVersions: 0, ttlSec: 5, keepDeletedCells: 'false' }]]));
      const put = (columnId: number, value: string, s: number) => ({ kind: 'put' as const, columnId, value, ht: S(s) });
      await db.writeRegular([{ type: 'cells', key, cells: [put(2, 'old', 10), put(2, 'new', 20), put(3, 'w', 10)] }], S(30), { term: 1, index: 1 });
      const read = async (at: number) => (await db.getRow(key, { readHt: S(at), resolveStatus: () => Promise.resolve({ status: 'ABORTED' }) }))?.columns;
      expect(await read(12)).toEqual(new Map([[2, 'old'], [3, 'w']]));
      expect(await read(21)).toEqual(new Map([[2, 'new']])); // w is past its family's 5 s TTL
      await db.writeRegular([{ type: 'cells', key, cells: [{ kind: 'deleteVersion', columnId: 2, ht: S(20) }] }], S(31), { term: 1, index: 2 });
      expect(await read(32)).toEqual(new Map([[2, 'old']]));
    } finally {
      await db.close();
    }
  });

  it('cell writes: a scan cut by its row limit resumes from its resume key and reads every row once', async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    try {
      const k = (i: number): DocKey => ({ hash: i, hashed: [BigInt(i)], range: [] });
      await db.writeRegular(Array.from({ length: 5 }, (_, i) => ({ type: 'cells' as const, key: k(i), cells: [{ kind: 'put' as const, columnId: 2, value: `r${i}` }] })), S(10), { term: 1, index: 1 });
      const seen: string[] = [];
      let start: Uint8Array | undefined;
      for (let page = 0; page < 10; page++) {
        const r = await db.readCells({ readHt: S(11), limit: 2, ...(start ? { startKey: start } : {}) });
        expect(r.rows.length).toBeLessThanOrEqual(2);
        seen.push(...r.rows.map((x) => String(x.cells[0]?.value)));
        if (!r.resumeKey) break;
        start = r.resumeKey;
      }
      expect(seen).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
      await expect(db.gc(S(20)).then(() => db.readCells({ readHt: S(19) }))).rejects.toMatchObject({ code: 'SNAPSHOT_TOO_OLD' });
    } finally {
      await db.close();
    }
  });
});
