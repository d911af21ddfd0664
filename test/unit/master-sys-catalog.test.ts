import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { encodeCatalog } from '../../master/catalog-codec';
import { SYS_CATALOG_COMPACT_EVERY_ENTRIES, SysCatalog } from '../../master/sys-catalog';
import '../../master/master-flags';

const dirs: string[] = [];
const open: SysCatalog[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.stop().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function openOne(dir: string): Promise<SysCatalog> {
  const flags = new Flags();
  flags.setFromString('durable_wal_write', 'false');
  flags.setFromString('master_raft_election_timeout_ticks', '3');
  const sc = await SysCatalog.open({ dataDir: dir, selfId: '127.0.0.1:7100', peers: ['127.0.0.1:7100'], flags, log: silentLogger(), rng: new SeededRng(1), send: () => undefined });
  open.push(sc);
  for (let i = 0; i < 200 && !sc.isLeaderReady(); i++) {
    sc.tick();
    await new Promise((r) => setTimeout(r, 2));
  }
  expect(sc.isLeaderReady()).toBe(true);
  return sc;
}

describe('master sys catalog', () => {
  it('sys catalog: a single master elects itself, refuses a duplicate table through Raft, and restarts from snapshot + log', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-sys-'));
    dirs.push(dir);
    const sc = await openOne(dir);
    const n = SYS_CATALOG_COMPACT_EVERY_ENTRIES + 50;
    // Enough ops to compact the log into a catalog snapshot at least once.
    const proposals: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i++) proposals.push(sc.propose({ type: 'registerTServer', tserver: { uuid: `ts${i}`, rpcAddress: `h:${i}`, webAddress: `h:${i + 1}` } }));
    await Promise.all(proposals);
    const table = { id: 'T', name: 'demo', schema: { columns: [{ name: 'id', id: 1, type: 'int64' as const, nullable: false }], hashColumns: ['id'], rangeColumns: [] }, numTablets: 1, replicationFactor: 1, state: 'RUNNING' as const, tabletIds: ['t1'], createdAtMs: 0 };
    await sc.propose({ type: 'createTable', table, tablets: [{ id: 't1', tableId: 'T', partition: { start: 0, end: 65536 }, replicas: [{ tserverUuid: 'ts1', memberType: 'VOTER' }] }] });
    await expect(sc.propose({ type: 'createTable', table: { ...table, id: 'T2', tabletIds: [] }, tablets: [] })).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    // Ticks drive compaction: tick until the catalog snapshot is there (bounded: 500 ticks).
    const snapshotted = (): boolean => fs.readdirSync(path.join(dir, 'sys-catalog', 'wal')).some((f) => f === 'snapshot');
    for (let i = 0; i < 500 && !snapshotted(); i++) {
      sc.tick();
      await new Promise((r) => setTimeout(r, 2));
    }
    // The log was compacted into a catalog snapshot (the ticks drive compaction).
    expect(fs.readdirSync(path.join(dir, 'sys-catalog', 'wal')).some((f) => f === 'snapshot')).toBe(true);
    const before = encodeCatalog(sc.state());
    await sc.stop();
    open.splice(0);
    const again = await openOne(dir);
    // The restarted catalog equals the one before (snapshot + replayed tail).
    for (let i = 0; i < 100 && Buffer.compare(Buffer.from(encodeCatalog(again.state())), Buffer.from(before)) !== 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(Buffer.from(encodeCatalog(again.state())).toString()).toBe(Buffer.from(before).toString());
    expect(again.state().tservers.size).toBe(n);
    expect(fs.readdirSync(path.join(dir, 'sys-catalog', 'wal')).length).toBeGreaterThan(0);
  }, 60_000);
});
