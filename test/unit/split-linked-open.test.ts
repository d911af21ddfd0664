/**
 * A linked split's children get their RegularDBs open from the build (tserver/split-children.ts,
 * docs/splitting.md "How a split happens"): the parent's checkpoint becomes the first child's
 * RegularDB and is opened once (the parent's memtable replayed and written to a table file there),
 * the second child's is a checkpoint of that open database, and each child's tablet takes its
 * engine over instead of opening the directory again.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { silentLogger } from '../../common/log';
import { RocksDbEngine, type KvEngine } from '../../docdb';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';
import { SPLIT_SCRATCH_PREFIX, SplitChildren } from '../../tserver/split-children';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';

const dirs: string[] = [];
const open: KvEngine[] = [];
afterEach(async () => {
  for (const e of open.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const peers: TabletMeta['peers'] = [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }];
const schema: TabletMeta['schema'] = { columns: [{ name: 'k', id: 0, type: 'int64', nullable: false }, { name: 'v', id: 1, type: 'string', nullable: true }], hashColumns: ['k'], rangeColumns: [] };
const child = (tabletId: string, start: number, end: number): TabletMeta => ({ tabletId, tableId: 'tbl', tableName: 'demo', schema, partition: { start, end }, peers, schemaVersion: 0 });
/** A row key of hash code `h` (data keys start at 0x20; the meta keys below are the parent's own). */
const rowKey = (h: number, i: number): Uint8Array => Uint8Array.of(0x47, h >> 8, h & 0xff, 0x49, i >> 8, i & 0xff);

async function all(e: KvEngine): Promise<string[]> {
  const out: string[] = [];
  const it = e.iterator({});
  for (let kv = await it.next(); kv; kv = await it.next()) out.push(Buffer.from(kv[0]).toString('hex'));
  await it.close();
  return out;
}

/** `busy`: the first child's open RegularDB cannot be checkpointed (RocksDB's background work changed its files). */
function builder(root: string, given: Map<string, KvEngine | undefined>, busy = false): SplitChildren {
  return new SplitChildren({
    tabletsDir: root,
    selfUuid: 'ts1',
    selfAddress: '127.0.0.1:1',
    flags: new Flags(),
    log: silentLogger(),
    openEngine: async (dir) => {
      const e = await RocksDbEngine.open(dir);
      if (busy && dir === path.join(root, 'left', 'regular')) e.checkpointTo = async () => undefined;
      return e;
    },
    openWal: async () => new MemoryLogStorage(),
    openPeer: async (meta, engines) => {
      given.set(meta.tabletId, engines?.regular);
      given.set(`${meta.tabletId}/intents`, engines?.intents);
      for (const e of [engines?.regular, engines?.intents]) if (e) open.push(e);
      return { raftGroup: () => ({ leadAssignedTerm: () => false }), step: () => undefined } as unknown as TabletPeer;
    },
    peer: () => undefined,
    addressOf: () => undefined,
  });
}

for (const busy of [false, true]) it(`split (rocksdb${busy ? ', the first child\'s files changing' : ''}): the checkpoint is opened once as the first child's RegularDB, the second's is ${busy ? 'a clone of it closed' : 'a checkpoint of it'}; both are handed over open (with empty IntentsDBs), with the parent's rows (table files and memtable) and without its meta keys`, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-linked-'));
  dirs.push(root);
  const parent = await RocksDbEngine.open(path.join(root, 'parent', 'regular'), { writeBufferBytes: 64 << 20 });
  open.push(parent);
  const value = new Uint8Array(500).fill(7);
  await parent.write([{ type: 'put', key: Uint8Array.of(0x01, 0x02), value: Uint8Array.of(9) }]); // a meta key (frontier, apply state)
  await parent.write(Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: rowKey(100, i), value })));
  await parent.flush(); // these in a table file (linked)
  await parent.write(Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: rowKey(40000, i), value })));
  expect(parent.memtableEntries()).toBe(200); // these only in the memtable and the WAL (copied)
  const given = new Map<string, KvEngine | undefined>();
  const built = await builder(root, given, busy).create([child('left', 0, 30000), child('right', 30000, 65536)], parent, { campaign: false });
  expect(built.map((b) => b.linked)).toEqual([true, true]);
  const left = given.get('left')!;
  const right = given.get('right')!;
  expect(left).toBeInstanceOf(RocksDbEngine);
  expect((left as RocksDbEngine).location).toBe(path.join(root, 'left', 'regular'));
  expect((right as RocksDbEngine).location).toBe(path.join(root, 'right', 'regular'));
  // Their IntentsDBs were opened during the build too (empty), and handed over.
  for (const id of ['left', 'right']) expect((given.get(`${id}/intents`) as RocksDbEngine).location).toBe(path.join(root, id, 'intents'));
  // The memtable was replayed once, in the first child, and written out: the second replays nothing
  // and holds only the meta keys' deletion, made after it opened; so it has no table file more than
  // the first (one more is the fourth L0 file of a parent with two: a compaction of all at once).
  expect((right as RocksDbEngine).memtableEntries()).toBe(1);
  const tableFiles = (id: string): number => fs.readdirSync(path.join(root, id, 'regular')).filter((n) => n.endsWith('.sst')).length;
  expect(tableFiles('left')).toBe(2);
  expect(tableFiles('right')).toBe(tableFiles('left'));
  const rows = await all(parent);
  expect(rows).toHaveLength(401);
  for (const e of [left, right]) expect(await all(e)).toEqual(rows.slice(1)); // every row (hidden later by range), no meta key
  // Two databases: a write to one is not seen by the other.
  await left.write([{ type: 'put', key: rowKey(200, 1), value }]);
  expect(await all(right)).toHaveLength(400);
  expect(await all(left)).toHaveLength(401);
  expect(fs.readdirSync(root).filter((n) => n.startsWith(SPLIT_SCRATCH_PREFIX))).toEqual([]);
  for (const id of ['left', 'right']) expect(fs.existsSync(path.join(root, id, 'meta.json'))).toBe(true);
  // The parent's WAL was linked, not copied, and replayed in the first child: the parent's own is
  // intact — it takes a write and, reopened, replays its memtable with every row.
  await parent.write([{ type: 'put', key: rowKey(300, 1), value }]);
  await parent.close();
  open.splice(open.indexOf(parent), 1);
  const again = await RocksDbEngine.open(path.join(root, 'parent', 'regular'), { writeBufferBytes: 64 << 20 });
  open.push(again);
  expect(again.memtableEntries()).toBe(0); // replayed and written out at the open
  expect(await all(again)).toHaveLength(402);
  expect(await all(left)).toHaveLength(401); // and the children do not see that write
});

it('split (rocksdb): a child left without meta.json by a crash mid-build is rebuilt from the parent, alone', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-linked-'));
  dirs.push(root);
  const parent = await RocksDbEngine.open(path.join(root, 'parent', 'regular'), { writeBufferBytes: 64 << 20 });
  open.push(parent);
  const value = new Uint8Array(100).fill(3);
  await parent.write(Array.from({ length: 50 }, (_, i) => ({ type: 'put' as const, key: rowKey(50000, i), value })));
  // What a crash leaves: the right child's directory half-made (its RegularDB there, no meta.json).
  fs.mkdirSync(path.join(root, 'right', 'regular'), { recursive: true });
  fs.writeFileSync(path.join(root, 'right', 'regular', 'junk'), 'x');
  const given = new Map<string, KvEngine | undefined>();
  const [built] = await builder(root, given).create([child('right', 30000, 65536)], parent, { campaign: false });
  expect(built!.linked).toBe(true);
  expect(fs.existsSync(path.join(root, 'right', 'regular', 'junk'))).toBe(false);
  expect(await all(given.get('right')!)).toHaveLength(50);
});
