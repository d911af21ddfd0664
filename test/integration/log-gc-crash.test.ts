/**
 * Log GC discards Raft log entries that both databases hold durably — synced into RocksDB's own
 * write-ahead log, not flushed to SST files. Real processes, real RocksDB, real SIGKILL: after every
 * replica has garbage-collected its log past the rows (so no log is left to replay them), all three
 * tservers die at once and restart; every acknowledged row, plain and transactional, is still there,
 * read back from the databases alone.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Row } from '../../client/client-types';
import { TesseraClient } from '../../client/tessera-client';
import { getJson } from '../../lab/console-http';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

interface TabletJson {
  tabletId: string;
  table: string;
  appliedIndex: number;
}

describe('log GC and crashes', () => {
  it('log gc: rows survive kill -9 of every tserver after the Raft log was garbage-collected past them', async () => {
    cluster = await ProcCluster.create({
      hostBase: 207,
      masters: 1,
      tservers: 3,
      tserverFlags: ['--log_gc_interval_ms=200', '--log_min_entries_to_retain=0', '--heartbeat_interval_ms=200'],
    });
    const cl = cluster;
    await cl.startAll();
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 20_000 });
    await client.createTable({ name: 'g', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1, replicationFactor: 3 });
    const rows: Row[] = Array.from({ length: 2000 }, (_, i) => ({ id: BigInt(i), v: `v${i}` }));
    await client.table('g').upsertMany(rows);
    for (let i = 0; i < 20; i++) {
      const tx = await client.beginTransaction();
      await tx.table('g').upsert({ id: BigInt(10_000 + i), v: `t${i}` });
      await tx.commit();
    }

    // Every replica's log must start above the index at which it applied the last write.
    const applied = new Map<string, number>();
    for (const t of cl.tservers) {
      const { tablets } = (await getJson(`http://${t.webAddress}/api/v1/tablets`, 3000)) as { tablets: TabletJson[] };
      const mine = tablets.find((x) => x.table === 'g');
      expect(mine, `tserver ${t.index} hosts a replica of g`).toBeDefined();
      applied.set(t.webAddress, mine!.appliedIndex);
    }
    for (const t of cl.tservers) {
      await waitFor(`tserver ${t.index}: log GC past the writes`, 30_000, async () => {
        const { tablets } = (await getJson(`http://${t.webAddress}/api/v1/tablets`, 3000)) as { tablets: TabletJson[] };
        const id = tablets.find((x) => x.table === 'g')!.tabletId;
        const d = (await getJson(`http://${t.webAddress}/api/v1/tablet?id=${id}`, 3000)) as { firstIndex: number };
        return d.firstIndex > applied.get(t.webAddress)!;
      });
    }

    await client.close();
    client = undefined;
    await Promise.all(cl.tservers.map((t) => cl.kill9(t)));
    for (const t of cl.tservers) cl.start(t);
    await cl.waitTServersAlive(3, 60_000);
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 20_000 });
    const c = client;
    const got = await waitFor('a readable table after the restart', 60_000, async () => c.table('g').scan({ timeoutMs: 10_000 }));
    expect(got).toHaveLength(rows.length + 20);
    const byId = new Map(got.map((r) => [r['id'] as bigint, r['v']]));
    for (let i = 0; i < 2000; i += 97) expect(byId.get(BigInt(i))).toBe(`v${i}`);
    for (let i = 0; i < 20; i++) expect(byId.get(BigInt(10_000 + i))).toBe(`t${i}`);
  }, 180_000);
});
