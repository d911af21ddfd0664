/**
 * COPY … FROM STDIN's sink over a recording table (no cluster): rows parsed as they arrive, written
 * in batches of COPY_BATCH_ROWS through upsertMany with at most COPY_BATCHES_IN_FLIGHT under way; and
 * the session's bookkeeping that empties a table again when a block that created or truncated it and
 * loaded it with COPY ends without committing (docs/sql.md, "COPY").
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Row, Table } from '../../client';
import { BulkLoads } from '../../sql/exec/bulk-load';
import { ROW_ID_COLUMN, type SqlCatalog, type SqlTableDef } from '../../sql/exec/catalog';
import { COPY_BATCH_ROWS, COPY_BATCHES_IN_FLIGHT, copyStatement } from '../../sql/exec/copy';
import { loadParser, parseSql } from '../../sql/sql-parser';

beforeAll(async () => {
  await loadParser();
});

const def: SqlTableDef = {
  name: 'acc',
  oid: 1,
  columns: [
    { name: 'aid', type: 'int4', typmod: -1, notNull: true },
    { name: 'filler', type: 'bpchar', typmod: 84, notNull: false },
    { name: ROW_ID_COLUMN, type: 'int8', typmod: -1, notNull: true, hidden: true },
  ],
  hash: [ROW_ID_COLUMN],
  range: [],
  stored: true,
  hasPrimaryKey: false,
};

function recordingTable(): { table: Table; batches: Row[][]; maxInFlight: () => number; release: () => void } {
  const batches: Row[][] = [];
  let inFlight = 0;
  let max = 0;
  const waiting: Array<() => void> = [];
  const table = {
    upsertMany: async (rows: readonly Row[]): Promise<void> => {
      batches.push([...rows]);
      max = Math.max(max, ++inFlight);
      // Each batch stays under way until the next turn of the test's release loop.
      await new Promise<void>((r) => waiting.push(r));
      inFlight--;
    },
  } as unknown as Table;
  return { table, batches, maxInFlight: () => max, release: () => waiting.splice(0).forEach((r) => r()) };
}

async function copyIn(sql: string, t: Table) {
  const stmt = parseSql(sql)[0]!.stmt;
  if (!('CopyStmt' in stmt)) throw new Error('not a COPY');
  const catalog = { require: async () => def } as unknown as SqlCatalog;
  const r = await copyStatement(stmt.CopyStmt, { catalog, table: () => t, rowsMax: 1_000_000, takeSequence: async () => [] });
  return r.copyIn!;
}

describe('sql COPY FROM', () => {
  it('sql copy: 12,345 lines sent in uneven pieces become batches of COPY_BATCH_ROWS, at most COPY_BATCHES_IN_FLIGHT under way, every row once', async () => {
    const rec = recordingTable();
    const timer = setInterval(rec.release, 1);
    try {
      const sink = await copyIn('COPY acc (aid, filler) FROM STDIN', rec.table);
      const n = 12_345;
      const text = Array.from({ length: n }, (_, i) => `${i + 1}\t${i % 7 === 0 ? '\\N' : i % 5 === 0 ? 'a\\tb' : ''}\n`).join('');
      for (let at = 0; at < text.length; ) {
        const size = 1 + ((at * 7919) % 4096);
        await sink.write(Buffer.from(text.slice(at, at + size)));
        at += size;
      }
      expect(await sink.done()).toBe(`COPY ${n}`);
    } finally {
      clearInterval(timer);
    }
    expect(rec.batches.map((b) => b.length)).toEqual([...Array<number>(Math.floor(12_345 / COPY_BATCH_ROWS)).fill(COPY_BATCH_ROWS), 12_345 % COPY_BATCH_ROWS]);
    expect(rec.maxInFlight()).toBeLessThanOrEqual(COPY_BATCHES_IN_FLIGHT);
    const rows = rec.batches.flat();
    expect(rows.map((r) => r['aid'])).toEqual(Array.from({ length: 12_345 }, (_, i) => BigInt(i + 1)));
    expect(rows[0]!['filler']).toBeNull(); // \N
    expect(rows[5]!['filler']).toBe('a\tb'); // an escape
    expect(rows[1]!['filler']).toBe('');
    expect(new Set(rows.map((r) => r[ROW_ID_COLUMN])).size).toBe(12_345); // a hidden row id each
  });

  it('sql copy: a malformed line fails the COPY with 22P02 and names the missing column', async () => {
    const rec = recordingTable();
    const sink = await copyIn('COPY acc (aid, filler) FROM STDIN', rec.table);
    await expect(sink.write(Buffer.from('1\tx\n2\n'))).rejects.toMatchObject({ sqlState: '22P02', message: 'missing data for column "filler"' });
  });
});

describe('sql bulk loads in a block', () => {
  it('sql copy: a block that loaded a table it created or truncated and then aborts empties exactly those tables again', async () => {
    const b = new BulkLoads();
    b.emptiedInBlock('a');
    b.emptiedInBlock('b');
    b.copyInto('a');
    b.copyInto('c'); // not emptied in this block: its load is not undone (COPY writes outside the block)
    const truncated: string[] = [];
    expect(await b.aborted(async (n) => void truncated.push(n))).toEqual([]);
    expect(truncated).toEqual(['a']);
    // The bookkeeping ended with the block.
    expect(await b.aborted(async (n) => void truncated.push(n))).toEqual([]);
    expect(truncated).toEqual(['a']);
  });

  it('sql copy: a committed block keeps its loads; a dropped table is not truncated; a failed truncate is a notice', async () => {
    const b = new BulkLoads();
    b.emptiedInBlock('a');
    b.copyInto('a');
    b.committed();
    const truncated: string[] = [];
    await b.aborted(async (n) => void truncated.push(n));
    expect(truncated).toEqual([]);
    b.emptiedInBlock('d');
    b.copyInto('d');
    b.dropped('d');
    b.emptiedInBlock('e');
    b.copyInto('e');
    const notices = await b.aborted(async (n) => {
      if (n === 'e') throw new Error('tablet servers unreachable');
      truncated.push(n);
    });
    expect(truncated).toEqual([]);
    expect(notices).toEqual(['the rows COPY loaded into "e" in this block could not be removed: tablet servers unreachable']);
  });
});
