import { beforeAll, describe, expect, it } from 'vitest';
import { applyCatalogOp, emptyCatalog } from '../../master/catalog-state';
import type { CatalogOp, CatalogState, TableInfo, TabletInfo } from '../../master/catalog-types';
import { validateCreateTable } from '../../master/ddl-validation';
import { parseSplitPolicy, rangePartitions } from '../../master/range-partitions';
import { encodeSplitPoints } from '../../client/split-points';
import { tabletForHash, type TableLocations } from '../../client/meta-cache';
import { TableSchema } from '../../client/table-schema';
import { bytesOfHex, compareKeyBytes, keyInBounds } from '../../common/key-bounds';
import { encodeDocKeyBytes } from '../../common/partition-hash';
import { loadParser, rewriteYugabyteSyntax } from '../../sql/sql-parser';
import { DbError } from '../../common/errors';

// The YugabyteDB rewrite runs PostgreSQL's own scanner (WebAssembly): load it first, whatever ran before in this worker.
beforeAll(async () => {
  await loadParser();
});

const columns = [
  { name: 'k', type: 'int64' as const },
  { name: 's', type: 'string' as const },
  { name: 'v', type: 'string' as const },
];
const schema = new TableSchema('t1', 'r', {
  schemaVersion: 0,
  schema: {
    columns: [
      { name: 'k', id: 1, type: 'int64', nullable: false },
      { name: 's', id: 2, type: 'string', nullable: false },
      { name: 'v', id: 3, type: 'string', nullable: true },
    ],
    hashColumns: [],
    rangeColumns: ['k', 's'],
  },
});

function locationsFor(splitKeys: Uint8Array[]): TableLocations {
  const parts = rangePartitions(splitKeys);
  return {
    schema,
    loadedAtMs: 0,
    tablets: parts.map((p, i) => ({ tabletId: `t${i}`, start: p.start, end: p.end, keyStart: bytesOfHex(p.keyStart), keyEnd: bytesOfHex(p.keyEnd), replicas: [] })),
  };
}

describe('range partitions and split points', () => {
  it('range partitions: N split points make N+1 contiguous key ranges, open at both ends', () => {
    const keys = encodeSplitPoints(columns, ['k', 's'], [[100], [200n], ['300', 'x']]);
    const parts = rangePartitions(keys);
    expect(parts).toHaveLength(4);
    expect(parts[0]!.keyStart).toBeUndefined();
    expect(parts[3]!.keyEnd).toBeUndefined();
    for (let i = 0; i + 1 < parts.length; i++) expect(parts[i]!.keyEnd).toBe(parts[i + 1]!.keyStart);
  });

  it('range partitions: unsorted, repeated or empty split points are refused with INVALID_ARGUMENT', () => {
    const [a, b] = encodeSplitPoints(columns, ['k', 's'], [[1], [2]]);
    expect(() => rangePartitions([b!, a!])).toThrow(/ascending/);
    expect(() => rangePartitions([a!, a!])).toThrow(DbError);
    expect(() => rangePartitions([new Uint8Array(0)])).toThrow(/empty/);
    expect(() => encodeSplitPoints(columns, ['k', 's'], [['nope']])).toThrow(/not a valid int64/);
    expect(() => encodeSplitPoints(columns, ['k', 's'], [[1, 'a', 'b']])).toThrow(/1 to 2/);
  });

  it('create table: a range table takes split points (or one tablet), a hash table refuses them', () => {
    const input = { name: 'r', columns: [{ name: 'k', type: 'int64' }], hashColumns: [], rangeColumns: ['k'], numTablets: 0, replicationFactor: 1 };
    expect(validateCreateTable(input, 3, 1).numTablets).toBe(1);
    const keys = encodeSplitPoints([{ name: 'k', type: 'int64' }], ['k'], [[10], [20]]);
    expect(validateCreateTable({ ...input, splitKeys: keys }, 3, 1).numTablets).toBe(3);
    expect(() => validateCreateTable({ ...input, numTablets: 3 }, 3, 1)).toThrow(/split points/);
    expect(() => validateCreateTable({ ...input, hashColumns: ['k'], rangeColumns: [], splitKeys: keys }, 3, 1)).toThrow(/hash partitioned/);
    expect(parseSplitPolicy('prefix:1', 2)).toBe('prefix:1');
    expect(parseSplitPolicy('any', 2)).toBeUndefined();
    expect(() => parseSplitPolicy('prefix:3', 2)).toThrow(/between 1/);
  });

  it('routing: every row goes to the tablet whose key range holds its encoded DocKey, in key order', () => {
    const loc = locationsFor(encodeSplitPoints(columns, ['k', 's'], [[100], [200, 'm']]));
    const cases: Array<[bigint, string, string]> = [[-5n, 'a', 't0'], [99n, 'zzz', 't0'], [100n, '', 't1'], [200n, 'a', 't1'], [200n, 'm', 't2'], [200n, 'n', 't2'], [10_000n, 'a', 't2']];
    for (const [k, s, want] of cases) {
      const key = schema.routeKey(schema.key({ k, s }))!;
      const t = tabletForHash(loc, 0, key);
      expect(t.tabletId).toBe(want);
      expect(keyInBounds(key, t.keyStart, t.keyEnd)).toBe(true);
    }
  });

  it('key bounds: a prefix bound keeps every row with that prefix on its right side', () => {
    const bound = encodeDocKeyBytes(0, [], [5n], { closeRange: false });
    for (const s of ['', 'a', '\u00ff']) expect(compareKeyBytes(encodeDocKeyBytes(0, [], [5n, s]), bound)).toBeGreaterThan(0);
    expect(compareKeyBytes(encodeDocKeyBytes(0, [], [4n, 'zzzz']), bound)).toBeLessThan(0);
  });

  it("sql parser: SPLIT AT VALUES ((…), (…)) becomes the table's split points", () => {
    const rw = rewriteYugabyteSyntax("CREATE TABLE r (k bigint, s text, PRIMARY KEY (k ASC, s ASC)) SPLIT AT VALUES ((100), (-5, 'it''s'))");
    expect(rw.sql).not.toMatch(/split/i);
    expect(rw.options[0]!.splitAt).toEqual([[100n], [-5n, "it's"]]);
  });
});

function catalogWithTable(): CatalogState {
  const tablets: TabletInfo[] = rangePartitions([]).map((p) => ({ id: 'p', tableId: 'T', partition: p, replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }] }));
  const table: TableInfo = { id: 'T', name: 'r', schema: { columns: [{ name: 'k', id: 1, type: 'int64', nullable: false }], hashColumns: [], rangeColumns: ['k'] }, numTablets: 1, replicationFactor: 1, state: 'RUNNING', tabletIds: ['p'], createdAtMs: 1 };
  const r = applyCatalogOp(emptyCatalog(), { type: 'createTable', table, tablets });
  expect(r.error).toBeUndefined();
  return r.state;
}

describe('catalog: splits', () => {
  it('catalog split: register adds the children, complete puts them in the parent\'s place and records history', () => {
    let state = catalogWithTable();
    const mid = Buffer.from(encodeSplitPoints(columns, ['k'], [[50]])[0]!).toString('hex');
    const children: TabletInfo[] = [
      { id: 'c1', tableId: 'T', partition: { start: 0, end: 65536, keyEnd: mid }, replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }] },
      { id: 'c2', tableId: 'T', partition: { start: 0, end: 65536, keyStart: mid }, replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }] },
    ];
    const reg: CatalogOp = { type: 'registerSplit', parentId: 'p', children, at: mid };
    state = applyCatalogOp(state, reg).state;
    expect(state.tablets.get('p')!.splitChildren).toEqual(['c1', 'c2']);
    expect(state.tables.get('T')!.tabletIds).toEqual(['p']);
    expect(applyCatalogOp(state, reg).error?.code).toBe('ALREADY_EXISTS');
    state = applyCatalogOp(state, { type: 'completeSplit', parentId: 'p', atMs: 5 }).state;
    expect(state.tables.get('T')!.tabletIds).toEqual(['c1', 'c2']);
    expect(state.tablets.has('p')).toBe(false);
    expect(state.tablets.get('c2')!.splitDepth).toBe(1);
    expect(state.tables.get('T')!.splitHistory).toEqual([{ parentId: 'p', children: ['c1', 'c2'], at: mid, atMs: 5 }]);
    expect(applyCatalogOp(state, { type: 'completeSplit', parentId: 'p', atMs: 6 }).error?.code).toBe('TABLET_NOT_FOUND');
  });
});

describe('split encodings', () => {
  it('split encodings: catalog split ops and the SPLIT tablet op survive their codecs', async () => {
    const { decodeCatalogOp, encodeCatalogOp } = await import('../../master/catalog-codec');
    const { decodeTabletOp, encodeTabletOp } = await import('../../tserver/tablet/tablet-op');
    for (const op of [{ type: 'completeSplit', parentId: 'p', atMs: 3 }, { type: 'abortSplit', parentId: 'p' }] as CatalogOp[]) expect(decodeCatalogOp(encodeCatalogOp(op))).toEqual(op);
    const split = { type: 'SPLIT' as const, children: [{ tabletId: 'a', partition: { start: 0, end: 100 } }, { tabletId: 'b', partition: { start: 100, end: 65536 } }], peers: [{ uuid: 'u', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' as const }] };
    expect(decodeTabletOp(encodeTabletOp(split))).toEqual(split);
    // The named leader of the children's first term (docs/splitting.md) round-trips; a malformed one is refused.
    const named = { ...split, leader: 'u' };
    expect(decodeTabletOp(encodeTabletOp(named))).toEqual(named);
    expect(() => decodeTabletOp(encodeTabletOp({ ...split, leader: 7 as unknown as string }))).toThrow(/leader/);
  });

  it('split points on the master: a point must lie strictly inside the tablet (hash or key range)', async () => {
    const { splitPartitions } = await import('../../master/split-manager');
    const hashTable = { schema: { hashColumns: ['k'] } } as TableInfo;
    expect(splitPartitions(hashTable, { start: 0, end: 100 }, { hash: 40 })).toEqual([{ start: 0, end: 40 }, { start: 40, end: 100 }]);
    expect(() => splitPartitions(hashTable, { start: 0, end: 100 }, { hash: 0 })).toThrow(/strictly inside/);
    const rangeTable = { schema: { hashColumns: [] as string[] } } as TableInfo;
    const [k1, k2] = encodeSplitPoints(columns, ['k'], [[10], [20]]);
    const [l, r] = splitPartitions(rangeTable, { start: 0, end: 65536, keyEnd: Buffer.from(k2!).toString('hex') }, { key: k1! });
    expect(l.keyEnd).toBe(r.keyStart);
    expect(r.keyEnd).toBe(Buffer.from(k2!).toString('hex'));
    expect(() => splitPartitions(rangeTable, { start: 0, end: 65536, keyEnd: Buffer.from(k1!).toString('hex') }, { key: k2! })).toThrow(/strictly inside/);
  });
});
