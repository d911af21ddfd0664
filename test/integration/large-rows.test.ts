/**
 * Rows large next to the RPC message limit: a tablet's answer to a scan page or to a batch of gets
 * would not fit in one message, so the tservers cut it by size (a scan answers a resume key, a read
 * the keys it answered) and the client asks for the rest. Real processes with
 * rpc_max_message_size = 1 MiB (an answer's budget is then 256 KiB) and 40 rows of 100 KiB in one
 * tablet: 4 MiB, which a default page (1000 rows) or a coalesced batch of 40 gets would need at once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { ProcCluster } from './cluster-harness';

const ROWS = 40;
const ROW_BYTES = 100 * 1024;
const value = (i: number): string => `${i}:`.padEnd(ROW_BYTES, String.fromCharCode(97 + (i % 26)));

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('large rows', () => {
  it('large rows: scans, transactional scans and coalesced gets of 4 MiB of rows succeed under a 1 MiB message limit', async () => {
    cluster = await ProcCluster.create({ hostBase: 111, masters: 1, tservers: 3, tserverFlags: ['--rpc_max_message_size=1048576'] });
    await cluster.startAll();
    client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 30_000, batchWrites: true });
    await client.createTable({ name: 'big', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1 });
    const rows = Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i), v: value(i) }));
    // 4 rows (400 KiB) per write RPC: below the tservers' 1 MiB limit.
    await client.table('big').upsertMany(rows, { rowsPerRpc: 4 });

    const scanned = await client.table('big').scan();
    expect(scanned.length).toBe(ROWS);
    for (const r of scanned) expect(r['v']).toBe(value(Number(r['id'])));

    const txn = await client.beginTransaction();
    const inTxn = await txn.table('big').scan();
    expect(inTxn.map((r) => Number(r['id'])).sort((a, b) => a - b)).toEqual([...Array(ROWS).keys()]);
    await txn.commit();

    // Issued together: one Read request per tablet for all 40 keys, answered in parts.
    const got = await Promise.all(rows.map((r) => client!.table('big').get({ id: r.id })));
    expect(got.map((r) => r?.['v'])).toEqual(rows.map((r) => r.v));
  });
});
