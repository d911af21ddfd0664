/**
 * A linked split's children get their RegularDBs open from the build (tserver/split-children.ts,
 * docs/splitting.md "How a split happens"): the parent's checkpoint (table files linked, its WAL set
 * aside) becomes the first child's RegularDB and is cloned for the second; the parent's memtable is
 * read from its WAL and each child writes its own rows of it; each child's tablet takes its engine
 * over instead of opening the directory again.
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

/** The children's builder, opening real RocksDB databases. */
function builder(root: string, given: Map<string, KvEngine | undefined>): SplitChildren {
  return new SplitChildren({
    tabletsDir: root,
    selfUuid: 'ts1',
    selfAddress: '127.0.0.1:1',
    flags: new Flags(),
    log: silentLogger(),
    openEngine: async (dir) => RocksDbEngine.open(dir),
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

const tableFiles = (root: string, id: string): number => fs.readdirSync(path.join(root, id, 'regular')).filter((n) => n.endsWith('.sst')).length;

for (const unreadable of [false, true]) it(`split (rocksdb${unreadable ? ', a WAL the reader cannot use' : ''}): both children are clones of one checkpoint (table files linked), handed over open with empty IntentsDBs and without the parent's meta keys; the parent's memtable ${unreadable ? 'replayed by RocksDB in each (one more table file)' : 'read from its WAL, each child writing only its own rows into its memtable (no table file more)'}`, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-linked-'));
  dirs.push(root);
  const parent = await RocksDbEngine.open(path.join(root, 'parent', 'regular'), { writeBufferBytes: 64 << 20 });
  open.push(parent);
  const value = new Uint8Array(500).fill(7);
  await parent.write([{ type: 'put', key: Uint8Array.of(0x01, 0x02), value: Uint8Array.of(9) }]); // a meta key (frontier, apply state)
  await parent.write(Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: rowKey(100, i), value })));
  await parent.flush(); // these in a table file (linked)
  await parent.write(Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: rowKey(40000, i), value })));
  await parent.write([{ type: 'put', key: Uint8Array.of(0x01, 0x03), value: Uint8Array.of(9) }]); // a meta key in the memtable
  expect(parent.memtableEntries()).toBe(201); // these only in the memtable and the WAL
  if (unreadable) {
    const real = parent.checkpointWalAside.bind(parent);
    parent.checkpointWalAside = async (dir, walDir) => {
      const r = await real(dir, walDir);
      return r && { ...r, wal: { ...r.wal, memtableEntries: r.wal.memtableEntries + 1 } };
    };
  }
  const given = new Map<string, KvEngine | undefined>();
  const built = await builder(root, given).create([child('left', 0, 30000), child('right', 30000, 65536)], parent, { campaign: false });
  expect(built.map((b) => b.linked)).toEqual([true, true]);
  const left = given.get('left') as RocksDbEngine;
  const right = given.get('right') as RocksDbEngine;
  expect(left.location).toBe(path.join(root, 'left', 'regular'));
  expect(right.location).toBe(path.join(root, 'right', 'regular'));
  for (const id of ['left', 'right']) expect((given.get(`${id}/intents`) as RocksDbEngine).location).toBe(path.join(root, id, 'intents'));
  const rows = (await all(parent)).filter((k) => !k.startsWith('01'));
  expect(rows).toHaveLength(400);
  if (unreadable) {
    // Each replayed the whole WAL at its open and wrote it out: every row (hidden later by range).
    for (const id of ['left', 'right']) expect(tableFiles(root, id)).toBe(2);
    for (const e of [left, right]) expect(await all(e)).toEqual(rows);
  } else {
    // No table file more than the parent's one: the memtable rows went into the right child's
    // memtable only (with the meta keys' deletion), none into the left's.
    for (const id of ['left', 'right']) expect(tableFiles(root, id)).toBe(1);
    expect(left.memtableEntries()).toBe(1);
    expect(right.memtableEntries()).toBe(201);
    expect(await all(left)).toEqual(rows.slice(0, 200));
    expect(await all(right)).toEqual(rows);
  }
  // Two databases: a write to one is not seen by the other.
  await left.write([{ type: 'put', key: rowKey(200, 1), value }]);
  expect(await all(right)).not.toContain(Buffer.from(rowKey(200, 1)).toString('hex'));
  expect(fs.readdirSync(root).filter((n) => n.startsWith(SPLIT_SCRATCH_PREFIX))).toEqual([]);
  for (const id of ['left', 'right']) expect(fs.existsSync(path.join(root, id, 'meta.json'))).toBe(true);
  // The children's memtable rows are durable: reopened, a child still has them.
  const rightRows = await all(right);
  await right.close();
  open.splice(open.indexOf(right), 1);
  const reopened = await RocksDbEngine.open(path.join(root, 'right', 'regular'));
  open.push(reopened);
  expect(await all(reopened)).toEqual(rightRows);
  // The parent's WAL was only linked and read: the parent's own is intact — it takes a write and,
  // reopened, replays its memtable with every row.
  await parent.write([{ type: 'put', key: rowKey(300, 1), value }]);
  await parent.close();
  open.splice(open.indexOf(parent), 1);
  const again = await RocksDbEngine.open(path.join(root, 'parent', 'regular'), { writeBufferBytes: 64 << 20 });
  open.push(again);
  expect(again.memtableEntries()).toBe(0); // replayed and written out at the open
  expect((await all(again)).filter((k) => !k.startsWith('01'))).toHaveLength(401);
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
