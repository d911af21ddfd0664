import { describe, expect, it } from 'vitest';
import { checkFamilies, defaultFamily, familyAttributes, parseFamilySpec } from '../../common/column-families';
import { DbError } from '../../common/errors';
import { validateAlterTable, validateCreateTable, type CreateTableInput } from '../../master/ddl-validation';
import type { TableInfo } from '../../master/catalog-types';
import { parseTabletMeta } from '../../tserver/tablet/tablet-meta';
import { familiesFromPb, familyToPb } from '../../rpc';

function err(f: () => unknown): DbError {
  try {
    f();
  } catch (e) {
    return e as DbError;
  }
  throw new Error('expected an error');
}

const base: CreateTableInput = {
  name: 't',
  columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string', family: 'cf1' }, { name: 'w', type: 'string' }],
  hashColumns: ['id'],
  rangeColumns: [],
  numTablets: 1,
  replicationFactor: 1,
  families: [parseFamilySpec('cf1:VERSIONS=3,TTL=10,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true')],
};

describe('column families', () => {
  it('families: the CLI spec parses every attribute, defaults fill the rest', () => {
    expect(parseFamilySpec('cf1:VERSIONS=3,TTL=10,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true')).toEqual({ name: 'cf1', versions: 3, minVersions: 1, ttlSec: 10, keepDeletedCells: 'true' });
    expect(parseFamilySpec('a:DURABILITY=flush,KEEP_DELETED_CELLS=TTL,TTL=FOREVER')).toEqual({ name: 'a', versions: 1, minVersions: 0, ttlSec: 0, keepDeletedCells: 'ttl', durability: 'FLUSH' });
    expect(parseFamilySpec('bare')).toEqual(defaultFamily('bare'));
    expect(familyAttributes(parseFamilySpec('cf1:VERSIONS=3,TTL=10'))).toBe('VERSIONS=3, MIN_VERSIONS=0, TTL=10, KEEP_DELETED_CELLS=false, DURABILITY=table');
  });

  it('families: each bad part is INVALID_ARGUMENT naming the part', () => {
    const cases: Array<[string, string]> = [
      ['cf1:VERSIONS=0', 'VERSIONS'],
      ['cf1:VERSIONS=x', 'VERSIONS'],
      ['cf1:MIN_VERSIONS=4,VERSIONS=3', 'MIN_VERSIONS'],
      ['cf1:TTL=-1', 'TTL'],
      ['cf1:KEEP_DELETED_CELLS=maybe', 'KEEP_DELETED_CELLS'],
      ['cf1:DURABILITY=never', 'DURABILITY'],
      ['cf1:COLOR=red', 'COLOR'],
      ['1cf:VERSIONS=1', 'NAME'],
    ];
    for (const [spec, part] of cases) {
      const e = err(() => parseFamilySpec(spec));
      expect(e.code, spec).toBe('INVALID_ARGUMENT');
      expect(e.message, spec).toContain(part === 'NAME' ? 'family name' : part);
    }
  });

  it('create table: columns get their family, `default` is added for the others, an unknown family is refused', () => {
    const v = validateCreateTable(base, 1, 1);
    expect(v.schema.columns.map((c) => c.family ?? 'default')).toEqual(['default', 'cf1', 'default']);
    expect(v.schema.families?.map((f) => f.name)).toEqual(['cf1', 'default']);
    const e = err(() => validateCreateTable({ ...base, families: [] }, 1, 1));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message).toContain('family cf1');
    expect(err(() => validateCreateTable({ ...base, families: [defaultFamily('cf1'), defaultFamily('cf1')] }, 1, 1)).message).toContain('declared twice');
  });

  it('alter table: a family is added or redefined whole in the next schema; added columns may name it', () => {
    const v = validateCreateTable(base, 1, 1);
    const t: TableInfo = { id: 'x', name: 't', schema: v.schema, numTablets: 1, replicationFactor: 1, state: 'RUNNING', tabletIds: [], createdAtMs: 0 };
    const next = validateAlterTable(t, { addColumns: [{ name: 'z', type: 'int64', family: 'cf2' }], dropColumns: [], renameColumns: [], newName: '', setFamilies: [parseFamilySpec('cf1:VERSIONS=5'), parseFamilySpec('cf2:TTL=60')] });
    expect(next.schema.families?.find((f) => f.name === 'cf1')).toEqual({ name: 'cf1', versions: 5, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' });
    expect(next.schema.columns.find((c) => c.name === 'z')?.family).toBe('cf2');
    const e = err(() => validateAlterTable(t, { addColumns: [{ name: 'z', type: 'int64', family: 'nope' }], dropColumns: [], renameColumns: [], newName: '' }));
    expect(e.message).toContain('family nope');
    // A family-only ALTER is a change.
    expect(validateAlterTable(t, { addColumns: [], dropColumns: [], renameColumns: [], newName: '', setFamilies: [parseFamilySpec('cf1:VERSIONS=2')] }).schema.families?.[0]?.versions).toBe(2);
  });

  it('families travel with the tablet: wire round trip and the tablet meta keep them', () => {
    const v = validateCreateTable(base, 1, 1);
    expect(familiesFromPb(v.schema.families!.map(familyToPb))).toEqual(v.schema.families);
    const meta = parseTabletMeta(JSON.parse(JSON.stringify({ tabletId: 'tb', tableId: 'x', tableName: 't', schema: v.schema, partition: { start: 0, end: 65536 }, peers: [{ uuid: 'u', rpcAddress: 'a' }], schemaVersion: 0 })));
    expect(meta.schema.families).toEqual(v.schema.families);
    expect(meta.schema.columns[1]?.family).toBe('cf1');
    expect(() => parseTabletMeta({ tabletId: 'tb', tableId: 'x', tableName: 't', schema: { ...v.schema, families: [{ name: 'cf1', versions: -2 }] }, peers: [{ uuid: 'u', rpcAddress: 'a' }] })).toThrow(/VERSIONS/);
    expect(checkFamilies(undefined, [{ name: 'a' }])).toEqual([defaultFamily()]);
  });
});
