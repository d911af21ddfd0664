import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRng } from '../../common/rng';
import { encodeDocKeyBytes, partitionHash } from '../../common/partition-hash';
import { keyInBounds, bytesOfHex } from '../../common/key-bounds';
import { MemoryEngine, RangeHidingEngine, RocksDbEngine, type DocKey } from '../../docdb';
import type { TabletManager } from '../../tserver/tablet-manager';
import { testTabletManager, untilTabletLeader } from './tablet-manager-harness';
import { SplitService } from '../../tserver/split-service';
import { childPartitions, findSplitPoint, rowRangeOf } from '../../tserver/split-apply';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { DbError } from '../../common/errors';

const dirs: string[] = [];
const managers: TabletManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function meta(kind: 'hash' | 'range'): TabletMeta {
  return {
    tabletId: 'parent',
    tableId: 'tbl',
    tableName: 'demo',
    schema: { columns: [{ name: 'k', id: 0, type: 'int64', nullable: false }, { name: 'v', id: 1, type: 'string', nullable: true }], hashColumns: kind === 'hash' ? ['k'] : [], rangeColumns: kind === 'hash' ? [] : ['k'] },
    partition: { start: 0, end: 65536 },
    peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }],
    schemaVersion: 0,
  };
}

function keyOf(kind: 'hash' | 'range', i: number): DocKey {
  return kind === 'hash' ? { hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] } : { hash: 0, hashed: [], range: [BigInt(i)] };
}

function manager(dataDir: string, engines?: Map<string, MemoryEngine>): TabletManager {
  const m = testTabletManager(dataDir, { splitCleanupDelayMs: 0, ...(engines ? { engines } : {}) });
  managers.push(m);
  return m;
}

const untilLeader = untilTabletLeader;

async function rowsOf(p: TabletPeer): Promise<DocKey[]> {
  const r = await p.scan({ limit: 100_000 });
  return r.rows.map((x) => x.key);
}

for (const engine of ['rocksdb', 'memory'] as const) {
  for (const kind of ['hash', 'range'] as const) {
    it(`split (${engine}, ${kind} table): both children are built from the parent's own data, hold exactly their rows, survive a restart; the parent answers TABLET_SPLIT`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-'));
      dirs.push(dir);
      const engines = engine === 'memory' ? new Map<string, MemoryEngine>() : undefined;
      const m = manager(dir, engines);
      await m.createTablet(meta(kind));
      const parent = await untilLeader(m, 'parent');
      const n = 300;
      for (let i = 0; i < n; i += 50) {
        await parent.write({ ops: Array.from({ length: 50 }, (_, j) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: keyOf(kind, i + j), columns: [{ columnId: 1, value: `v${i + j}` }] } })) });
      }
      // RocksDB: half the rows in table files (hard-linked by the split), half in the memtable and WAL (copied).
      if (engine === 'rocksdb') {
        await parent.engines().regular.flush();
        await parent.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: keyOf(kind, 0), columns: [{ columnId: 1, value: 'again' }] } }] });
        await parent.read([keyOf(kind, 0)], {}); // answered at commit: the read waits for its apply (in the memtable)
      }
      const svc = new SplitService({ manager: () => m });
      if (engine === 'rocksdb') {
        // The master's flush of every replica before an automatic split (any replica: no leader
        // check) answers the size once flushed; then rows it did not see stay in the memtable.
        const rocks = parent.engines().regular as RocksDbEngine;
        expect(rocks.memtableEntries()).toBeGreaterThan(0);
        const { dataBytes } = await svc.split({ tabletId: 'parent', flushOnly: true });
        expect(rocks.memtableEntries()).toBe(0);
        expect(Number(dataBytes)).toBe((await rocks.stats()).sstBytes + (await rocks.stats()).memtableBytes);
        expect(Number(dataBytes)).toBeGreaterThan(0);
        await parent.write({ ops: Array.from({ length: 100 }, (_, j) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: keyOf(kind, j), columns: [{ columnId: 1, value: `v${j}` }] } })) });
        await parent.read([keyOf(kind, 0)], {}); // waits for that write's apply
        expect(rocks.memtableEntries()).toBeGreaterThanOrEqual(100);
      }
      const { splitPoint } = await svc.split({ tabletId: 'parent' });
      const point = kind === 'hash' ? { hash: splitPoint!.hash! } : { key: new Uint8Array(splitPoint!.key!) };
      const [left, right] = childPartitions(parent.meta, point);
      const children = [{ tabletId: 'left', partition: left }, { tabletId: 'right', partition: right }].map((c) => ({ tabletId: c.tabletId, partition: { start: c.partition.start, end: c.partition.end, keyStart: bytesOfHex(c.partition.keyStart), keyEnd: bytesOfHex(c.partition.keyEnd) } }));
      await svc.split({ tabletId: 'parent', children, peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }] });
      expect(parent.meta.splitInto?.map((c) => c.tabletId)).toEqual(['left', 'right']);
      await expect(parent.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: keyOf(kind, 1), columns: [] } }] })).rejects.toMatchObject({ code: 'TABLET_SPLIT' });
      const check = async (mgr: TabletManager): Promise<void> => {
        let total = 0;
        for (const id of ['left', 'right']) {
          const child = await untilLeader(mgr, id);
          const keys = await rowsOf(child);
          expect(keys.length).toBeGreaterThan(0);
          total += keys.length;
          const range = rowRangeOf(child.meta);
          for (const k of keys) {
            const enc = kind === 'hash' ? encodeDocKeyBytes(k.hash, k.hashed as bigint[], []) : encodeDocKeyBytes(0, [], k.range as bigint[]);
            expect(keyInBounds(enc, range.start, range.end)).toBe(true);
          }
        }
        expect(total).toBe(n);
      };
      await check(m);
      if (engine === 'rocksdb') {
        // Hard links: each child holds the parent's files, hides the other rows, then deletes them.
        for (const id of ['left', 'right']) {
          const child = m.get(id);
          expect(child.meta.splitLinked).toBe(true);
          const view = child.engines().regular;
          expect(view).toBeInstanceOf(RangeHidingEngine);
          const range = rowRangeOf(child.meta);
          const strays = async (): Promise<number> => {
            const it = (view as RangeHidingEngine).inner.iterator({ gte: Uint8Array.of(0x20), lt: Uint8Array.of(0xff) });
            let out = 0;
            for (let kv = await it.next(); kv; kv = await it.next()) if (!keyInBounds(kv[0], range.start, range.end)) out++;
            await it.close();
            return out;
          };
          for (let i = 0; i < 500 && (await strays()) > 0; i++) await new Promise((r) => setTimeout(r, 10));
          expect(await strays()).toBe(0);
        }
      }
      // The children take writes of their own; the parent stays split across a restart.
      const right1 = await untilLeader(m, 'right');
      const rk = (await rowsOf(right1))[0]!;
      await right1.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: rk, columns: [{ columnId: 1, value: 'after' }] } }] });
      await m.stop();
      managers.splice(managers.indexOf(m), 1);
      const m2 = manager(dir, engines);
      await m2.openAll();
      await check(m2);
      expect(m2.get('parent').meta.splitInto).toHaveLength(2);
      await expect(m2.get('parent').read([keyOf(kind, 1)], {})).rejects.toMatchObject({ code: 'TABLET_SPLIT' });
      await expect(m2.get('parent').scan({})).rejects.toBeInstanceOf(DbError);
    }, 60_000);
  }
}

describe('split point', () => {
  it('split point: a tablet with one row cannot be split (INVALID_ARGUMENT), a policy prefix is honoured', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-'));
    dirs.push(dir);
    const m = manager(dir, new Map());
    await m.createTablet(meta('range'));
    const p = await untilLeader(m, 'parent');
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: keyOf('range', 5), columns: [{ columnId: 1, value: 'x' }] } }] });
    const svc = new SplitService({ manager: () => m });
    await expect(svc.split({ tabletId: 'parent' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  }, 30_000);

  it('split point: a large RocksDB tablet is split near its middle without a full count — from the key space while in the memtable, from size estimates once in table files', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-'));
    dirs.push(dir);
    const e = await RocksDbEngine.open(path.join(dir, 'db'));
    try {
      const n = 8000;
      // Incompressible values, so the table files really hold ~8 MB (above the size search's floor).
      const rnd = new SeededRng(11);
      for (let i = 0; i < n; i += 500) {
        await e.write(Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: encodeDocKeyBytes(0, [], [BigInt(i + j)]), value: Uint8Array.from({ length: 1000 }, () => Math.floor(rnd.next() * 256)) })));
      }
      // In the memtable (no size estimates): the middle of the key space, even keys here.
      const atOf = (key: Uint8Array): number => {
        let at = 0;
        while (at < n && Buffer.compare(Buffer.from(encodeDocKeyBytes(0, [], [BigInt(at)])), Buffer.from(key)) < 0) at++;
        return at;
      };
      const inMem = atOf((await findSplitPoint(e, meta('range'), 0)).key!);
      expect(inMem).toBeGreaterThan(n * 0.35);
      expect(inMem).toBeLessThan(n * 0.65);
      await e.flush();
      expect(await e.approximateBytes(Uint8Array.of(0x20), Uint8Array.of(0xff))).toBeGreaterThan(4 << 20);
      const p = await findSplitPoint(e, meta('range'), 0);
      // The right child's first key: the row index where the split falls.
      let at = 0;
      while (at < n && Buffer.compare(Buffer.from(encodeDocKeyBytes(0, [], [BigInt(at)])), Buffer.from(p.key!)) < 0) at++;
      expect(at).toBeGreaterThan(n * 0.35);
      expect(at).toBeLessThan(n * 0.65);
    } finally {
      await e.close();
    }
  }, 30_000);
});
