import { describe, expect, it } from 'vitest';
import { applyCatalogOp, emptyCatalog, tableByName } from '../../master/catalog-state';
import { decodeCatalog, decodeCatalogOp, encodeCatalog, encodeCatalogOp } from '../../master/catalog-codec';
import type { CatalogOp, CatalogState, TableInfo, TabletInfo } from '../../master/catalog-types';
import { hashPartitions, validateAlterTable, validateCreateTable } from '../../master/ddl-validation';
import { DbError } from '../../common/errors';

function table(id: string, name: string, tabletIds: string[]): TableInfo {
  return {
    id,
    name,
    schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }], hashColumns: ['id'], rangeColumns: [] },
    numTablets: tabletIds.length,
    replicationFactor: 3,
    state: 'RUNNING',
    tabletIds,
    createdAtMs: 1,
  };
}
function tablet(id: string, tableId: string, i: number, k: number): TabletInfo {
  return { id, tableId, partition: hashPartitions(k)[i]!, replicas: ['a', 'b', 'c'].map((u) => ({ tserverUuid: u, memberType: 'VOTER' as const })) };
}
function createOp(id: string, name: string, k = 2): CatalogOp {
  const ids = Array.from({ length: k }, (_, i) => `${id}-t${i}`);
  return { type: 'createTable', table: table(id, name, ids), tablets: ids.map((t, i) => tablet(t, id, i, k)) };
}
function run(ops: CatalogOp[]): { state: CatalogState; errors: string[] } {
  let state = emptyCatalog();
  const errors: string[] = [];
  for (const op of ops) {
    const r = applyCatalogOp(state, op);
    if (r.error) errors.push(r.error.code);
    state = r.state;
  }
  return { state, errors };
}

describe('master catalog state', () => {
  it('catalog: create, set replicas and drop change tables and tablets together', () => {
    const { state, errors } = run([
      createOp('T1', 'demo'),
      { type: 'setReplicas', tabletId: 'T1-t0', replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }, { tserverUuid: 'd', memberType: 'VOTER' }] },
    ]);
    expect(errors).toEqual([]);
    expect(tableByName(state, 'demo')?.id).toBe('T1');
    expect(state.tablets.get('T1-t0')!.replicas.map((r) => r.tserverUuid)).toEqual(['a', 'd']);
    const dropped = applyCatalogOp(state, { type: 'dropTable', tableId: 'T1' });
    expect(dropped.error).toBeUndefined();
    expect(dropped.state.tables.size).toBe(0);
    expect(dropped.state.tablets.size).toBe(0);
  });

  it('catalog: a second table of the same name is refused with ALREADY_EXISTS and changes nothing', () => {
    const { state, errors } = run([createOp('T1', 'demo'), createOp('T2', 'demo')]);
    expect(errors).toEqual(['ALREADY_EXISTS']);
    expect(state.tables.size).toBe(1);
    expect(state.tablets.size).toBe(2);
  });

  it('catalog: dropping an unknown table is TABLE_NOT_FOUND; bad replica lists are refused', () => {
    const { errors } = run([
      { type: 'dropTable', tableId: 'nope' },
      createOp('T1', 'demo'),
      { type: 'setReplicas', tabletId: 'T1-t0', replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }, { tserverUuid: 'a', memberType: 'VOTER' }] },
      { type: 'setReplicas', tabletId: 'zz', replicas: [{ tserverUuid: 'a', memberType: 'VOTER' }] },
    ]);
    expect(errors).toEqual(['TABLE_NOT_FOUND', 'INVALID_ARGUMENT', 'TABLET_NOT_FOUND']);
  });

  it('catalog: ops and snapshots survive encoding, and replaying ops equals loading the snapshot', () => {
    const ops: CatalogOp[] = [createOp('T1', 'a', 3), createOp('T2', 'b', 1), { type: 'registerTServer', tserver: { uuid: 'a', rpcAddress: 'h:1', webAddress: 'h:2' } }, { type: 'dropTable', tableId: 'T2' }];
    const replayed = run(ops.map((o) => decodeCatalogOp(encodeCatalogOp(o)))).state;
    const loaded = decodeCatalog(encodeCatalog(run(ops).state));
    expect(encodeCatalog(loaded)).toEqual(encodeCatalog(replayed));
    expect(loaded.tables.get('T1')!.tabletIds).toHaveLength(3);
  });

  it('catalog: alterTable moves the table to the next schema version; a stale fromVersion (a concurrent ALTER won) is TRY_AGAIN; a rename onto another table is ALREADY_EXISTS; it survives encoding', () => {
    const base = run([createOp('T1', 'demo'), createOp('T2', 'other')]).state;
    const schema = { columns: [{ name: 'id', id: 1, type: 'int64' as const, nullable: false }, { name: 'x', id: 2, type: 'string' as const, nullable: true }], hashColumns: ['id'], rangeColumns: [] };
    const op: CatalogOp = { type: 'alterTable', tableId: 'T1', fromVersion: 0, name: 'demo2', schema, nextColumnId: 3 };
    const r = applyCatalogOp(base, decodeCatalogOp(encodeCatalogOp(op)));
    expect(r.error).toBeUndefined();
    const t = r.state.tables.get('T1')!;
    expect([t.name, t.schemaVersion, t.nextColumnId, t.schema.columns.length]).toEqual(['demo2', 1, 3, 2]);
    expect(tableByName(r.state, 'demo')).toBeUndefined();
    expect(applyCatalogOp(r.state, op).error?.code).toBe('TRY_AGAIN');
    expect(applyCatalogOp(r.state, { ...op, fromVersion: 1, name: 'other' }).error?.code).toBe('ALREADY_EXISTS');
    expect(applyCatalogOp(r.state, { ...op, tableId: 'nope' }).error?.code).toBe('TABLE_NOT_FOUND');
    expect(decodeCatalog(encodeCatalog(r.state)).tables.get('T1')).toEqual(t);
  });

  it('catalog: garbage entry bytes are CORRUPTION, not a crash', () => {
    expect(() => decodeCatalogOp(new Uint8Array([1, 2, 3]))).toThrow(DbError);
    expect(() => decodeCatalogOp(new TextEncoder().encode('{"v":1,"op":{"type":"bogus"}}'))).toThrow(/unknown op type/);
  });
});

describe('master DDL validation', () => {
  const ok = { name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], hashColumns: ['id'], rangeColumns: [], numTablets: 3, replicationFactor: 0 };
  const code = (f: () => unknown): string => {
    try {
      f();
      return 'OK';
    } catch (e) {
      return e instanceof DbError ? e.code : 'NOT_DBERROR';
    }
  };

  it('ddl: a good table gets ids, non-null keys and the default RF', () => {
    const v = validateCreateTable(ok, 3, 3);
    expect(v.replicationFactor).toBe(3);
    expect(v.schema.columns).toEqual([
      { name: 'id', id: 1, type: 'int64', nullable: false },
      { name: 'value', id: 2, type: 'string', nullable: true },
    ]);
  });

  it('ddl: unknown type, no primary key, bad names and RF above live tservers are INVALID_ARGUMENT', () => {
    expect(code(() => validateCreateTable({ ...ok, columns: [{ name: 'id', type: 'int32' }] }, 3, 3))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateCreateTable({ ...ok, hashColumns: [] }, 3, 3))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateCreateTable({ ...ok, name: '1bad' }, 3, 3))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateCreateTable({ ...ok, columns: [...ok.columns, { name: 'id', type: 'int64' }] }, 3, 3))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateCreateTable({ ...ok, hashColumns: ['nope'] }, 3, 3))).toBe('INVALID_ARGUMENT');
    expect(() => validateCreateTable(ok, 2, 3)).toThrow(/\(2 live\)/);
  });

  it('ddl: ALTER TABLE adds nullable columns with fresh ids (never a dropped one\'s), drops non-key columns, renames columns (keys too) and the table', () => {
    const t: TableInfo = {
      ...table('T1', 'demo', ['a']),
      schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }, { name: 'v', id: 2, type: 'string', nullable: true }, { name: 'w', id: 3, type: 'int64', nullable: true }], hashColumns: ['id'], rangeColumns: [] },
    };
    const a = validateAlterTable(t, { addColumns: [{ name: 'n', type: 'bool' }], dropColumns: ['w'], renameColumns: [{ from: 'id', to: 'key' }, { from: 'v', to: 'value' }], newName: 'demo2' });
    expect(a.name).toBe('demo2');
    expect(a.schema).toEqual({ columns: [{ name: 'key', id: 1, type: 'int64', nullable: false }, { name: 'value', id: 2, type: 'string', nullable: true }, { name: 'n', id: 4, type: 'bool', nullable: true }], hashColumns: ['key'], rangeColumns: [] });
    expect(a.nextColumnId).toBe(5);
    // After w (id 3) is gone, a new w gets id 5: the next id is kept, not derived from the columns left.
    const t2: TableInfo = { ...t, schema: a.schema, nextColumnId: a.nextColumnId };
    expect(validateAlterTable(t2, { addColumns: [{ name: 'w', type: 'string' }], dropColumns: [], renameColumns: [], newName: '' }).schema.columns.at(-1)).toEqual({ name: 'w', id: 5, type: 'string', nullable: true });
    const none = { addColumns: [], dropColumns: [], renameColumns: [], newName: '' };
    expect(code(() => validateAlterTable(t, none))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, dropColumns: ['id'] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, dropColumns: ['nope'] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, addColumns: [{ name: 'v', type: 'string' }] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, addColumns: [{ name: 'z', type: 'int32' }] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, addColumns: [{ name: 'z', type: 'string', nullable: false }] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, dropColumns: ['v'], renameColumns: [{ from: 'v', to: 'x' }] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, renameColumns: [{ from: 'v', to: 'w' }] }))).toBe('INVALID_ARGUMENT');
    expect(code(() => validateAlterTable(t, { ...none, newName: '9x' }))).toBe('INVALID_ARGUMENT');
    // Swapping two names in one change is fine (renames see the names before it).
    expect(validateAlterTable(t, { ...none, renameColumns: [{ from: 'v', to: 'w' }, { from: 'w', to: 'v' }] }).schema.columns.map((c) => `${c.name}#${c.id}`)).toEqual(['id#1', 'w#2', 'v#3']);
  });

  it('ddl: K tablets split the hash space into contiguous ranges ending at 65536', () => {
    for (const k of [1, 2, 3, 7, 256]) {
      const p = hashPartitions(k);
      expect(p[0]!.start).toBe(0);
      expect(p[k - 1]!.end).toBe(65536);
      for (let i = 1; i < k; i++) expect(p[i]!.start).toBe(p[i - 1]!.end);
      for (const x of p) expect(x.end).toBeGreaterThan(x.start);
    }
  });
});
