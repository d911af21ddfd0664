/**
 * ALTER TABLE on real processes: columns added (nullable), dropped, renamed and the table renamed,
 * each change one schema version carried to every tablet through its Raft log. Clients that loaded
 * the table before a change (stale schema) take the new one up by themselves — a tablet refuses a
 * request built with another version (SCHEMA_VERSION_MISMATCH) and the client retries with the new
 * schema; a row naming a column added since makes the client load the schema again. Writes keep
 * going while the schema changes; a dropped column's values never come back (not even under a new
 * column of the same name); a tserver that was down during an ALTER catches up from its log.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { DbError, ErrorCode } from '../../common/errors';
import { getJson } from '../../lab/console-http';
import { ProcCluster, waitFor, type Proc } from './cluster-harness';

let cluster: ProcCluster | undefined;
const clients: TesseraClient[] = [];

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await cluster?.destroy();
});

async function connect(cl: ProcCluster): Promise<TesseraClient> {
  const c = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 20_000 });
  clients.push(c);
  return c;
}

async function errorOf(p: Promise<unknown>): Promise<DbError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(DbError);
  return e as DbError;
}

async function schemaVersions(p: Proc, tableId: string): Promise<number[]> {
  const body = (await getJson(`http://${p.webAddress}/api/v1/tablets`, 3000)) as { tablets: Array<{ tableId: string; schemaVersion: number }> };
  return body.tablets.filter((t) => t.tableId === tableId).map((t) => t.schemaVersion);
}

describe('ALTER TABLE', () => {
  it('alter table: add, drop, rename columns and the table; stale clients follow; writes go on; a down tserver catches up', async () => {
    cluster = await ProcCluster.create({ hostBase: 195, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    await cl.startAll();
    const a = await connect(cl);
    const stale = await connect(cl);
    const tableId = await a.createTable({ name: 't', columns: [{ name: 'id', type: 'int64' }, { name: 'a', type: 'string' }, { name: 'b', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 3 });
    await a.table('t').upsertMany(Array.from({ length: 100 }, (_, i) => ({ id: BigInt(i), a: `a${i}`, b: BigInt(i * 10) })));
    // The stale client loads the table now (schema version 0).
    expect(await stale.table('t').get({ id: 1n })).toEqual({ id: 1n, a: 'a1', b: 10n });

    // 1. Add a column: old rows read it as null; the altering client writes it at once.
    const progress: number[] = [];
    const v1 = await a.alterTable('t', { addColumns: [{ name: 'c', type: 'string' }] }, { onProgress: (p) => progress.push(p.tabletsDone) });
    expect(v1.schemaVersion).toBe(1);
    expect(progress.at(-1)).toBe(2);
    await a.table('t').upsert({ id: 1n, c: 'x' });
    expect(await a.table('t').get({ id: 1n })).toEqual({ id: 1n, a: 'a1', b: 10n, c: 'x' });
    expect((await a.table('t').get({ id: 2n }))?.['c'] ?? null).toBeNull();
    // The stale client names the new column: it loads the schema again by itself.
    await stale.table('t').upsert({ id: 3n, c: 'from the stale client' });
    expect((await a.table('t').get({ id: 3n }))?.['c']).toBe('from the stale client');
    for (const p of cl.tservers) expect(await schemaVersions(p, tableId)).toEqual([1, 1]);

    // 2. Drop a column, with writes running on another client the whole time (none may fail).
    const writer = await connect(cl);
    let writes = 0;
    let stop = false;
    const load = Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 400 && !stop; i++) {
          await writer.table('t').upsert({ id: BigInt(1000 + w * 1000 + i), a: `w${w}` });
          writes++;
        }
      }),
    );
    await waitFor('some writes before the ALTER', 30_000, () => writes > 50, 20);
    const v2 = await a.alterTable('t', { dropColumns: ['b'] });
    expect(v2.schemaVersion).toBe(2);
    await waitFor('some writes after the ALTER', 30_000, () => writes > 200, 20);
    stop = true;
    await load;
    // A client whose schema predates the drop reads with it: the tablet refuses, the client reloads.
    expect(await stale.table('t').get({ id: 1n })).toEqual({ id: 1n, a: 'a1', c: 'x' });
    const gone = await errorOf(stale.table('t').upsert({ id: 4n, b: 5n }));
    expect(gone.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(gone.message).toContain('has no column b');
    const rows = await a.table('t').scan({ timeoutMs: 30_000 });
    expect(rows.length).toBe(100 + writes);
    expect(rows.every((r) => !('b' in r))).toBe(true);

    // 3. A transaction that wrote before an ALTER goes on after it (its next write is rebuilt).
    const txn = await stale.beginTransaction();
    await txn.table('t').upsert({ id: 5n, a: 'txn-before' });
    await a.alterTable('t', { addColumns: [{ name: 'd', type: 'bool' }] });
    await txn.table('t').upsert({ id: 6n, a: 'txn-after', d: true });
    await txn.commit();
    expect(await a.table('t').get({ id: 6n })).toEqual({ id: 6n, a: 'txn-after', c: null, d: true });
    expect((await a.table('t').get({ id: 5n }))?.['a']).toBe('txn-before');

    // 4. A column of a dropped column's name is a new column: the old values do not come back.
    await a.alterTable('t', { addColumns: [{ name: 'b', type: 'string' }] });
    expect((await a.table('t').get({ id: 1n }))?.['b'] ?? null).toBeNull();

    // 5. Refused changes say why and change nothing.
    expect((await errorOf(a.alterTable('t', { dropColumns: ['id'] }))).code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect((await errorOf(a.alterTable('t', { addColumns: [{ name: 'a', type: 'string' }] }))).message).toContain('two columns named a');
    expect((await errorOf(a.alterTable('t', {}))).message).toContain('changes nothing');
    expect((await errorOf(a.alterTable('nope', { dropColumns: ['x'] }))).code).toBe(ErrorCode.TABLE_NOT_FOUND);
    expect((await errorOf(a.alterTable('transactions', { addColumns: [{ name: 'x', type: 'string' }] }))).code).toBe(ErrorCode.NOT_SUPPORTED);
    expect((await a.listTables()).find((t) => t.name === 't')?.schemaVersion).toBe(4);

    // 6. A tserver down during an ALTER replays it from its log when it comes back.
    const down = cl.tservers[2]!;
    await cl.kill9(down);
    const v5 = await a.alterTable('t', { renameColumns: [{ from: 'a', to: 'a2' }, { from: 'id', to: 'key' }], renameTo: 't2' });
    expect(v5.schemaVersion).toBe(5);
    expect(await a.table('t2').get({ key: 1n })).toEqual({ key: 1n, a2: 'a1', c: 'x', d: null, b: null });
    expect((await errorOf(a.table('t').get({ id: 1n }))).code).toBe(ErrorCode.TABLE_NOT_FOUND);
    cl.start(down);
    await waitFor('the restarted tserver on schema version 5', 60_000, async () => (await schemaVersions(down, tableId).catch(() => [])).join() === '5,5', 200);
    type TablePage = { schemaVersion: number; tabletsOnSchemaVersion: number; columns: Array<{ name: string; id: number }> };
    const tablePage = async (): Promise<TablePage> => (await getJson(`http://${cl.masters[0]!.webAddress}/api/v1/table?name=t2`, 3000)) as TablePage;
    // The master learns each leader's schema version from its next heartbeat (a leader may have moved
    // to the restarted tserver, whose first reports follow its restart).
    await waitFor('the master to see both tablets\' leaders on schema version 5', 30_000, async () => (await tablePage().catch(() => undefined))?.tabletsOnSchemaVersion === 2, 200);
    const table = await tablePage();
    expect(table.schemaVersion).toBe(5);
    expect(table.tabletsOnSchemaVersion).toBe(2);
    // Ids are never reused: b (dropped, id 3) came back as a new column with a new id.
    expect(table.columns.map((c) => `${c.name}#${c.id}`)).toEqual(['key#1', 'a2#2', 'c#4', 'd#5', 'b#6']);
  }, 240_000);
});
