/**
 * Per-table durability (issue 57) below the master: the catalog keeps a table's level through ALTER,
 * a tablet replica opens its Raft log at its table's level, and a CHANGE_SCHEMA entry carrying a new
 * level moves the replica's log to it, durably in meta.json.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { applyCatalogOp, emptyCatalog } from '../../master/catalog-state';
import { decodeCatalog, decodeCatalogOp, encodeCatalog, encodeCatalogOp } from '../../master/catalog-codec';
import { durabilityOf, type CatalogOp, type TableInfo } from '../../master/catalog-types';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import { parseTabletMeta, readTabletMeta } from '../../tserver/tablet/tablet-meta';
import { demoTabletMeta, openTestPeer, PeerJanitor } from './tablet-peer-harness';
import { DbError } from '../../common/errors';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

function table(durability?: TableInfo['durability']): TableInfo {
  return {
    id: 'T1',
    name: 'demo',
    schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }], hashColumns: ['id'], rangeColumns: [] },
    numTablets: 1,
    replicationFactor: 1,
    state: 'RUNNING',
    tabletIds: ['T1-t0'],
    createdAtMs: 0,
    ...(durability ? { durability } : {}),
  };
}

describe('table durability: catalog and tablet replicas', () => {
  it('durability: a table without a level is FSYNC; ALTER to a level keeps the schema, takes the next version, and survives encoding', () => {
    expect(durabilityOf(table())).toBe('FSYNC');
    const created = applyCatalogOp(emptyCatalog(), { type: 'createTable', table: table('FLUSH'), tablets: [{ id: 'T1-t0', tableId: 'T1', partition: { start: 0, end: 65536 }, replicas: [] }] }).state;
    expect(durabilityOf(created.tables.get('T1')!)).toBe('FLUSH');
    const t = created.tables.get('T1')!;
    const op: CatalogOp = { type: 'alterTable', tableId: 'T1', fromVersion: 0, name: t.name, schema: t.schema, nextColumnId: 2, durability: 'ASYNC' };
    const altered = applyCatalogOp(created, decodeCatalogOp(encodeCatalogOp(op))).state.tables.get('T1')!;
    expect([altered.durability, altered.schemaVersion]).toEqual(['ASYNC', 1]);
    // An ALTER that names no level keeps the table's.
    const again = applyCatalogOp(applyCatalogOp(created, op).state, { ...op, fromVersion: 1, durability: undefined }).state.tables.get('T1')!;
    expect(again.durability).toBe('ASYNC');
    expect(decodeCatalog(encodeCatalog({ ...created, tables: new Map([['T1', altered]]) })).tables.get('T1')!.durability).toBe('ASYNC');
  });

  it('durability: tablet metadata refuses an unknown level; CHANGE_SCHEMA round-trips with and without one', () => {
    expect(() => parseTabletMeta({ ...demoTabletMeta(), durability: 'SOMETIMES' })).toThrow(DbError);
    expect(parseTabletMeta({ ...demoTabletMeta(), durability: 'FLUSH' }).durability).toBe('FLUSH');
    const schema = demoTabletMeta().schema;
    const withLevel: TabletOp = { type: 'CHANGE_SCHEMA', schemaVersion: 2, tableName: 'demo', schema, durability: 'ASYNC' };
    const without: TabletOp = { type: 'CHANGE_SCHEMA', schemaVersion: 2, tableName: 'demo', schema };
    expect(decodeTabletOp(encodeTabletOp(withLevel))).toEqual(withLevel);
    expect(decodeTabletOp(encodeTabletOp(without))).toEqual(without);
  });

  it('durability: a replica opens its log at its table\'s level, and an ALTER (CHANGE_SCHEMA) moves it, durably across a reopen', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-durability-'));
    janitor.dirs.push(dir);
    let p = await openTestPeer(dir, { meta: { ...demoTabletMeta(), durability: 'FLUSH' } });
    expect(p.walDurability()).toBe('FLUSH');
    expect(await p.alterSchema(p.meta.schema, 1, 'demo', 'ASYNC')).toBe(1);
    expect(p.walDurability()).toBe('ASYNC');
    expect(readTabletMeta(dir).durability).toBe('ASYNC');
    await p.stop();
    p = await openTestPeer(dir, { meta: readTabletMeta(dir) });
    janitor.peers.push(p);
    expect(p.walDurability()).toBe('ASYNC');
    // A schema-only change (no level in the entry) keeps the level.
    await p.alterSchema(p.meta.schema, 2, 'demo');
    expect(p.walDurability()).toBe('ASYNC');
  }, 30_000);

  it('durability: a replica whose log lost its tail (databases ahead of it) rebases the log and applies new writes instead of skipping them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-durability-'));
    janitor.dirs.push(dir);
    const key = (i: number) => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });
    const upsert = (i: number, v: string) => ({ ops: [{ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: v }] } }] });
    const meta = { ...demoTabletMeta(), durability: 'ASYNC' as const };
    let p = await openTestPeer(dir, { meta });
    for (let i = 0; i < 20; i++) await p.write(upsert(i, `before${i}`));
    await p.stop();
    // The whole log is gone (an ASYNC log's worst case); RocksDB kept what it applied.
    fs.rmSync(path.join(dir, 'wal'), { recursive: true, force: true });
    p = await openTestPeer(dir, { meta });
    janitor.peers.push(p);
    expect(p.raftGroup().status().appliedIndex).toBeGreaterThanOrEqual(20);
    for (let i = 0; i < 20; i++) await p.write(upsert(i, `after${i}`));
    const r = await p.read([key(0), key(19)], {});
    expect([r.rows[0]?.columns.get(1), r.rows[1]?.columns.get(1)]).toEqual(['after0', 'after19']);
  }, 30_000);
});
