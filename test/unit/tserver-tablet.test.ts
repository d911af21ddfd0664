import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import { ManualClock } from '../../common/clock';
import { memtableBytes, TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC } from '../../docdb/docdb-flags';
import { HISTORY_GC_MIN_NEW_VERSIONS_PCT } from '../../tserver/tserver-flags';
import { demoTabletMeta, openTestPeer, PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { readTabletMeta, type TableSchema } from '../../tserver/tablet/tablet-meta';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { DocKey } from '../../docdb/doc-db-api';
import type { DocDb } from '../../docdb/doc-db';
import { docKeyLength, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from '../../docdb/storage-keys';
import { htFrom } from '../../common/hybrid-time';

const janitor = new PeerJanitor();
const { dirs } = janitor;
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });

/**
 * A tablet of its own for the history GC tests: `retentionSec` (undefined: the default, 900 s) and
 * `upsert(i, v)` writing column 1 of row i.
 */
async function gcTablet(
  retentionSec?: number,
  more: Record<string, string> = {},
  wall?: ManualClock,
): Promise<{ p: TabletPeer; flags: Flags; upsert: (i: number, v: string) => ReturnType<TabletPeer['write']> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
  dirs.push(dir);
  const flags = new Flags();
  if (retentionSec !== undefined) flags.setAtRuntime(TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC.name, String(retentionSec), true);
  for (const [name, value] of Object.entries(more)) flags.setAtRuntime(name, value, true);
  const p = await openTestPeer(dir, wall ? { flags, wall } : { flags });
  const upsert = (i: number, v: string) => p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 1, value: v }] } }] });
  return { p, flags, upsert };
}

describe('TabletPeer', () => {
  it('tablet: history GC drops versions older than the retention interval that no read needs, then skips while nothing is written above its cutoff; reads below the floor fail SNAPSHOT_TOO_OLD', async () => {
    const { p, upsert } = await gcTablet(0); // the cutoff is "now"
    const first = await upsert(1, 'a');
    for (const v of ['b', 'c', 'd']) await upsert(1, v);
    await upsert(2, 'x');
    const g = await p.historyGc();
    // Three overwritten versions of row 1 (liveness and column each); row 2's single version stays.
    expect(g?.versionsDropped).toBe(6);
    expect(p.historyGcStats).toMatchObject({ runs: 1, skipped: 0, versionsDropped: 6 });
    expect(p.historyFloorHt()).toBe(g!.cutoffHt);
    expect(await p.historyGc()).toBeUndefined(); // nothing written above the cutoff: nothing new to drop
    expect(p.historyGcStats.skipped).toBe(1);
    const r = await p.read([key(1), key(2)], {});
    expect(r.rows.map((x) => x?.columns.get(1))).toEqual(['d', 'x']);
    const old = (await p.read([key(1)], { readHt: first }).catch((e: unknown) => e)) as DbError;
    expect(old.code).toBe(ErrorCode.SNAPSHOT_TOO_OLD);
    await upsert(2, 'y');
    expect((await p.historyGc())?.versionsDropped).toBe(2);
    expect(p.historyGcStats.runs).toBe(2);
    // DROP COLUMN with nothing written since: the next pass runs anyway and deletes the column's values.
    expect(await p.historyGc()).toBeUndefined();
    await p.alterSchema({ ...p.meta.schema, columns: p.meta.schema.columns.filter((c) => c.id !== 1) }, 1, p.meta.tableName);
    const d = await p.historyGc();
    expect(d?.droppedColumnVersions).toBe(2); // row 1's 'd' and row 2's 'y'
    expect(p.historyGcStats).toMatchObject({ runs: 3, skipped: 2, droppedColumnVersions: 2 });
    expect(await p.historyGc()).toBeUndefined();
    await p.stop();
  }, 30_000);

  it('tablet: a history GC pass is skipped while every version is newer than its cutoff (a tablet younger than the retention), except to collect a dropped column', async () => {
    const { p, flags, upsert } = await gcTablet(); // the default retention, 900 s: nothing written now is below the cutoff
    expect(await p.historyGc()).toBeUndefined(); // never written
    for (const v of ['a', 'b', 'c']) await upsert(1, v);
    expect(await p.historyGc()).toBeUndefined();
    expect(p.historyGcStats).toMatchObject({ runs: 0, skipped: 2, skippedNothingOld: 2, versionsScanned: 0 });
    expect(p.historyFloorHt()).toBe(0n);
    // DROP COLUMN: its values go whatever their time, so the next pass runs; then young again, it skips.
    await p.alterSchema({ ...p.meta.schema, columns: p.meta.schema.columns.filter((c) => c.id !== 1) }, 1, p.meta.tableName);
    const d = await p.historyGc();
    expect(d).toMatchObject({ versionsDropped: 3, droppedColumnVersions: 3 });
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(2), columns: [] } }] }); // a row of key columns only
    expect(await p.historyGc()).toBeUndefined();
    expect(p.historyGcStats).toMatchObject({ runs: 1, skippedNothingOld: 3 });
    // Once the cutoff passes the oldest version (retention 0: the cutoff is now), passes run again.
    flags.setAtRuntime(TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC.name, '0', true);
    expect((await p.historyGc())?.versionsDropped).toBe(2); // row 1's two older liveness versions
    expect(p.historyGcStats).toMatchObject({ runs: 2, skippedNothingOld: 3 });
    await p.stop();
  }, 30_000);

  it('tablet: a history GC pass is put off while the versions written since the last pass are fewer than history_gc_min_new_versions_pct of those it kept, and runs anyway after 11 such skips', async () => {
    const { p, flags, upsert } = await gcTablet(0, { [HISTORY_GC_MIN_NEW_VERSIONS_PCT.name]: '50' });
    for (let i = 0; i < 100; i++) await upsert(i, 'a');
    expect((await p.historyGc())?.versionsScanned).toBe(200); // kept: 200 (liveness and column of each row)
    for (let i = 0; i < 10; i++) await upsert(i, 'b'); // about 30 puts (versions and frontiers) < 50 % of 200
    expect(await p.historyGc()).toBeUndefined();
    expect(p.historyGcStats).toMatchObject({ runs: 1, skipped: 1, skippedFewNew: 1 });
    for (let i = 10; i < 50; i++) await upsert(i, 'b'); // now 50 rows overwritten: at least 100 puts
    const g = await p.historyGc();
    expect(g?.versionsDropped).toBe(100); // the 50 rows' older liveness and column versions
    expect(p.historyGcStats).toMatchObject({ runs: 2, skippedFewNew: 1 });
    // Too few new versions for ever (1000 %): the 12th chance runs all the same.
    flags.setAtRuntime(HISTORY_GC_MIN_NEW_VERSIONS_PCT.name, '1000', true);
    await upsert(1, 'c');
    for (let k = 0; k < 11; k++) expect(await p.historyGc()).toBeUndefined();
    expect(p.historyGcStats.skippedFewNew).toBe(12);
    expect((await p.historyGc())?.versionsDropped).toBe(2);
    // 0 %: every pass with anything written above the last cutoff runs.
    flags.setAtRuntime(HISTORY_GC_MIN_NEW_VERSIONS_PCT.name, '0', true);
    await upsert(2, 'c');
    expect((await p.historyGc())?.versionsDropped).toBe(2);
    expect(p.historyGcStats).toMatchObject({ runs: 4, skippedFewNew: 12 });
    await p.stop();
  }, 30_000);

  it('tablet: versions written above the last cutoff but before the last pass count as new (they become collectable as the cutoff passes them)', async () => {
    // The retention (1 s) passes on a manual clock: only the test moves time, however slow the machine.
    const wall = new ManualClock();
    const { p, upsert } = await gcTablet(1, {}, wall);
    for (let i = 0; i < 100; i++) await upsert(i, 'a');
    wall.advanceMs(1100);
    expect((await p.historyGc())?.versionsDropped).toBe(0);
    for (let i = 0; i < 50; i++) await upsert(i, 'b');
    expect((await p.historyGc())?.versionsDropped).toBe(0); // the overwrites are younger than the retention
    wall.advanceMs(1100);
    // Nothing written since that pass, but the overwrites now lie below the cutoff: the pass runs.
    expect((await p.historyGc())?.versionsDropped).toBe(100);
    expect(p.historyGcStats).toMatchObject({ runs: 3, skippedFewNew: 0 });
    expect(await p.historyGc()).toBeUndefined(); // then nothing above the cutoff: skipped
    await p.stop();
  }, 30_000);

  it('tablet: versions written since the last pass but still younger than the retention do not count towards running the next one', async () => {
    const wall = new ManualClock(); // the retention passes when the test says so
    const { p, upsert } = await gcTablet(1, {}, wall);
    for (let i = 0; i < 100; i++) await upsert(i, 'a');
    expect(await p.historyGc()).toBeUndefined(); // younger than the retention (a sample of the write count is taken)
    wall.advanceMs(1100);
    expect((await p.historyGc())?.versionsScanned).toBe(200); // kept 200; that sample lies below this cutoff
    for (let i = 0; i < 100; i++) await upsert(i, 'b'); // as many new versions as kept, all younger than 1 s
    expect(await p.historyGc()).toBeUndefined(); // none of them at or below the cutoff yet: put off
    expect(p.historyGcStats).toMatchObject({ runs: 1, skippedNothingOld: 1, skippedFewNew: 1 });
    wall.advanceMs(1100);
    expect((await p.historyGc())?.versionsDropped).toBe(200); // now they are: 'a' of every row goes
    expect(p.historyGcStats).toMatchObject({ runs: 2, skippedFewNew: 1 });
    await p.stop();
  }, 30_000);

  it('tablet: writes are readable, INSERT/UPDATE check existence, and rows survive reopen (log replay)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
    dirs.push(dir);
    let p = await openTestPeer(dir);
    const hts = await Promise.all(
      Array.from({ length: 100 }, (_, i) => p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 1, value: `v${i}` }] } }] })),
    );
    expect(new Set(hts.map(String)).size).toBe(100);
    const dup = await p.write({ ops: [{ kind: 'INSERT', op: { type: 'upsert', key: key(5), columns: [{ columnId: 1, value: 'x' }] } }] }).catch((e: unknown) => e);
    expect((dup as DbError).code).toBe(ErrorCode.ALREADY_EXISTS);
    const missing = await p.write({ ops: [{ kind: 'UPDATE', op: { type: 'upsert', key: key(1000), columns: [{ columnId: 1, value: 'x' }] } }] }).catch((e: unknown) => e);
    expect((missing as DbError).code).toBe(ErrorCode.NOT_FOUND);
    await p.write({ ops: [{ kind: 'DELETE', op: { type: 'delete', key: key(3) } }] });
    const r = await p.read([key(0), key(3), key(99)], {});
    expect(r.rows[0]?.columns.get(1)).toBe('v0');
    expect(r.rows[1]).toBeUndefined();
    expect(r.rows[2]?.columns.get(1)).toBe('v99');
    const before = p.status().appliedIndex;
    await p.stop();

    p = await openTestPeer(dir);
    expect(p.status().appliedIndex).toBeGreaterThanOrEqual(before);
    const r2 = await p.read([key(0), key(3), key(50)], {});
    expect(r2.rows[0]?.columns.get(1)).toBe('v0');
    expect(r2.rows[1]).toBeUndefined();
    expect(r2.rows[2]?.columns.get(1)).toBe('v50');
    const s = await p.scan({ limit: 1000 });
    expect(s.rows.length).toBe(99);
    await p.stop();
  }, 30_000);

  it('tablet: CHANGE_SCHEMA (ALTER TABLE) changes the replica\'s schema when applied, durably in meta.json; an older or equal version is a no-op; the entry round-trips through the codec', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
    dirs.push(dir);
    let p = await openTestPeer(dir);
    const schema: TableSchema = { ...p.meta.schema, columns: [...p.meta.schema.columns, { name: 'w', id: 2, type: 'int64', nullable: true }] };
    const op: TabletOp = { type: 'CHANGE_SCHEMA', schemaVersion: 1, tableName: 'demo2', schema };
    expect(decodeTabletOp(encodeTabletOp(op))).toEqual(op);
    expect(await p.alterSchema(schema, 1, 'demo2')).toBe(1);
    expect([p.meta.schemaVersion, p.meta.tableName, p.meta.schema.columns.map((c) => c.name).join()]).toEqual([1, 'demo2', 'id,v,w']);
    expect(await p.alterSchema(demoTabletMeta().schema, 1, 'other')).toBe(1);
    await p.proposeOp({ ...op, schemaVersion: 0, tableName: 'older' });
    expect([p.meta.schemaVersion, p.meta.tableName]).toEqual([1, 'demo2']);
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 7n }] } }] });
    await p.stop();
    const onDisk = readTabletMeta(dir);
    expect([onDisk.schemaVersion, onDisk.tableName, onDisk.schema]).toEqual([1, 'demo2', schema]);
    p = await openTestPeer(dir, { meta: onDisk });
    expect(p.meta.schemaVersion).toBe(1);
    expect((await p.read([key(1)], {})).rows[0]?.columns.get(2)).toBe(7n);
    await p.stop();
  }, 30_000);

  it('tablet: after DROP COLUMN (CHANGE_SCHEMA) reads ignore the column and compaction deletes its values, also after a reopen; a column added later under the same name has a new id and is kept', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
    dirs.push(dir);
    let p = await openTestPeer(dir);
    const [id, v] = demoTabletMeta().schema.columns;
    const withW: TableSchema = { ...p.meta.schema, columns: [id!, v!, { name: 'w', id: 2, type: 'int64', nullable: true }] };
    expect(await p.alterSchema(withW, 1, 'demo')).toBe(1);
    for (let i = 0; i < 3; i++) await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 1, value: `v${i}` }, { columnId: 2, value: BigInt(i) }] } }] });
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 10n }] } }] });
    const stored = async (): Promise<number[]> => {
      const ids: number[] = [];
      const it = (p.db() as DocDb).regularDb.db.engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END });
      for (let e = await it.next(); e !== undefined; e = await it.next()) {
        const k = Buffer.from(e[0]);
        const { sub } = parseRegularKey(k, docKeyLength(k));
        if (sub.kind === 'column') ids.push(sub.id);
      }
      await it.close();
      return ids.sort();
    };
    await p.read([key(1)], {}); // a write is answered at commit: the read waits for its apply before the storage is looked at
    expect(await stored()).toEqual([1, 1, 1, 2, 2, 2, 2]);
    const rows = async () => (await p.read([key(0), key(1), key(2)], {})).rows.map((r) => (r ? Object.fromEntries(r.columns) : undefined));
    expect(await rows()).toEqual([{ 1: 'v0', 2: 0n }, { 1: 'v1', 2: 10n }, { 1: 'v2', 2: 2n }]);

    // ALTER TABLE demo DROP COLUMN w: not read from the CHANGE_SCHEMA entry on, nor after a reopen.
    expect(await p.alterSchema({ ...withW, columns: [id!, v!] }, 2, 'demo')).toBe(2);
    expect(await rows()).toEqual([{ 1: 'v0' }, { 1: 'v1' }, { 1: 'v2' }]);
    await p.stop();
    p = await openTestPeer(dir, { meta: readTabletMeta(dir) });
    expect(await rows()).toEqual([{ 1: 'v0' }, { 1: 'v1' }, { 1: 'v2' }]);
    const nowHt = htFrom(BigInt(Date.now()) * 1000n, 0);
    const g = await (p.db() as DocDb).gc(nowHt);
    expect([g.droppedColumnVersions, g.versionsDropped]).toEqual([4, 5 /* and row 1's older liveness */]);
    expect(await stored()).toEqual([1, 1, 1]);
    expect(await rows()).toEqual([{ 1: 'v0' }, { 1: 'v1' }, { 1: 'v2' }]);

    // ALTER TABLE demo ADD COLUMN w: the master gives it a new id (3); compaction keeps it.
    expect(await p.alterSchema({ ...withW, columns: [id!, v!, { name: 'w', id: 3, type: 'int64', nullable: true }] }, 3, 'demo')).toBe(3);
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(1), columns: [{ columnId: 3, value: 7n }] } }] });
    expect((await (p.db() as DocDb).gc(htFrom(BigInt(Date.now()) * 1000n, 0))).droppedColumnVersions).toBe(0);
    expect(await rows()).toEqual([{ 1: 'v0' }, { 1: 'v1', 3: 7n }, { 1: 'v2' }]);
    await p.stop();
  }, 30_000);

  it('tablet: a replica whose IntentsDB is corrupt fails to open with CORRUPTION and closes what it opened, so its files can be removed and the tablet opened afresh at once in this process', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
    dirs.push(dir);
    const p = await openTestPeer(dir);
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'v1' }] } }] });
    await p.stop();
    fs.writeFileSync(path.join(dir, 'intents', 'CURRENT'), 'not-a-manifest\n');
    const err = await TabletPeer.open(testPeerDeps(dir)).then(() => undefined, (e: unknown) => e);
    expect((err as DbError).code).toBe(ErrorCode.CORRUPTION);
    // RegularDB opened before IntentsDB failed: still held, RocksDB would refuse this open (its LOCK).
    fs.rmSync(dir, { recursive: true, force: true });
    const fresh = await openTestPeer(dir);
    expect((await fresh.read([key(1)], {})).rows[0]).toBeUndefined();
    await fresh.stop();
  }, 30_000);

  it('tablet: RocksDB\'s background work of both databases; a database that cannot answer (closing under a reopen) is left out of the read, not thrown to the console or scrape that asked', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tablet-'));
    dirs.push(dir);
    let intentsClosing = false;
    const deps = testPeerDeps(dir);
    const p = await TabletPeer.open({
      ...deps,
      openEngine: async (d) => {
        const e = await RocksDbEngine.open(d);
        if (path.basename(d) === 'intents') {
          const real = e.background.bind(e);
          e.background = () => {
            if (intentsClosing) throw new DbError(ErrorCode.SHUTTING_DOWN, 'kv engine is closed');
            return real();
          };
        }
        return e;
      },
    });
    janitor.peers.push(p);
    await untilLeaderReady(p);
    const zero = { flushes: 0, compactions: 0, stallSeconds: 0 };
    expect(p.backgroundWork()).toMatchObject({ regulardb: zero, intentsdb: zero });
    intentsClosing = true;
    const w = p.backgroundWork();
    expect(w?.regulardb).toMatchObject(zero);
    expect(w && 'intentsdb' in w).toBe(false);
  }, 30_000);
});

describe('memtable sizes (memstore_size_spread_pct)', () => {
  it('each database gets a size of its own within ±spread of memstore_size_mb, the same one for the same server and directory; 0 % gives memstore_size_mb exactly', () => {
    const MiB = 1024 * 1024;
    // The 3 replicas of one tablet, both databases each: 6 sizes.
    const who = ['uuid-a', 'uuid-b', 'uuid-c'].flatMap((u) => ['regular', 'intents'].map((db) => `${u}:/data/tablets/t1/${db}`));
    const sizes = who.map((w) => memtableBytes(4, 25, w));
    for (const b of sizes) {
      expect(b).toBeGreaterThanOrEqual(3 * MiB);
      expect(b).toBeLessThanOrEqual(5 * MiB);
    }
    expect(new Set(sizes).size).toBe(sizes.length);
    // Spread over the range, not bunched: the 6 sizes span more than a quarter of it.
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeGreaterThan(0.5 * MiB);
    expect(who.map((w) => memtableBytes(4, 25, w))).toEqual(sizes);
    expect(memtableBytes(4, 0, who[0]!)).toBe(4 * MiB);
    expect(memtableBytes(1, 90, who[1]!)).toBeGreaterThanOrEqual(0.1 * MiB);
  });
});
