/**
 * A split reads its parent's memtable from the RocksDB WAL (docdb/rocksdb-wal.ts) that the
 * checkpoint set aside (RocksDbEngine.checkpointWalAside), instead of letting RocksDB replay it into
 * one more L0 table file (docs/splitting.md, "How a split happens").
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { RocksDbEngine, walOpGroups, WalFormatError, type WalOp } from '../../docdb';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const key = (i: number): Buffer => Buffer.from(`k${String(i).padStart(6, '0')}`);
const hex = (ops: ReadonlyArray<{ type: string; key: Uint8Array; value?: Uint8Array }>): string[] =>
  ops.map((o) => `${o.type} ${Buffer.from(o.key).toString('hex')} ${o.value ? Buffer.from(o.value).toString('hex') : ''}`);

async function count(e: RocksDbEngine): Promise<number> {
  let n = 0;
  const it = e.iterator({});
  for (let kv = await it.next(); kv; kv = await it.next()) n++;
  await it.close();
  return n;
}

it('checkpointWalAside: table files in the checkpoint, the WAL linked beside it with its size; the WAL reads back as exactly the memtable\'s writes, in order, whatever the source writes after', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-'));
  dirs.push(dir);
  const e = await RocksDbEngine.open(path.join(dir, 'db'), { writeBufferBytes: 64 << 20 });
  await e.write(Array.from({ length: 500 }, (_, j) => ({ type: 'put' as const, key: key(j), value: Buffer.alloc(100, 1) })));
  await e.flush(); // in a table file: not in the WAL's live part
  // Small and large values (a record of 100 KiB spans blocks: first, middle and last fragments;
  // the log spans several of the reader's reads), deletions, and a key written twice.
  const written: WalOp[] = [];
  for (let b = 0; b < 40; b++) {
    const ops: WalOp[] = [];
    for (let j = 0; j < 25; j++) {
      const i = 1000 + b * 25 + j;
      // b 20: one value larger than the reader's 8 MiB arena (it grows), amid records in the 4 MiB reads.
      const big = j === 0 ? (b === 20 ? 9 << 20 : 100_000) : 1 + ((i * 37) % 3000);
      ops.push(j % 7 === 3 ? { type: 'del', key: key(i - 900) } : { type: 'put', key: key(i), value: Buffer.alloc(big, i % 251) });
    }
    if (b === 39) ops.push({ type: 'put', key: key(1000), value: Buffer.from('again') });
    await e.write(ops);
    written.push(...ops);
  }
  expect(e.memtableEntries()).toBe(written.length);
  const cp = path.join(dir, 'cp');
  const walDir = path.join(dir, 'wal');
  const r = await e.checkpointWalAside(cp, walDir);
  expect(r).toBeDefined();
  expect(fs.readdirSync(cp).filter((n) => n.endsWith('.log'))).toEqual([]);
  expect(r!.wal.memtableEntries).toBe(written.length);
  expect(r!.wal.files.length).toBeGreaterThanOrEqual(1);
  const name = path.basename(r!.wal.files.at(-1)!.path);
  expect(fs.statSync(r!.wal.files.at(-1)!.path).ino).toBe(fs.statSync(path.join(dir, 'db', name)).ino); // linked, not copied
  const read = async (): Promise<string[]> => {
    const out: string[] = [];
    for await (const group of walOpGroups(r!.wal.files)) out.push(...hex(group)); // views of reused buffers: read at once
    return out;
  };
  expect(await read()).toEqual(hex(written));
  // The source goes on writing into the same (linked) file: the first `size` bytes read the same.
  await e.write([{ type: 'put', key: key(9999), value: Buffer.alloc(5000, 9) }]);
  expect(fs.statSync(r!.wal.files.at(-1)!.path).size).toBeGreaterThan(r!.wal.files.at(-1)!.size);
  expect(await read()).toEqual(hex(written));
  // The checkpoint holds the table files only: opened, it has the flushed rows and replays nothing.
  const opened = await RocksDbEngine.open(cp);
  try {
    expect(opened.memtableEntries()).toBe(0);
    expect(await count(opened)).toBe(500);
  } finally {
    await opened.close();
  }
  await e.close();
});

/** The operations the streaming reader finds in `bytes`, written to a file as a WAL. */
async function readBytes(bytes: Buffer): Promise<WalOp[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-'));
  dirs.push(dir);
  const file = path.join(dir, '000001.log');
  fs.writeFileSync(file, bytes);
  const out: WalOp[] = [];
  for await (const group of walOpGroups([{ path: file, size: bytes.length }])) out.push(...group.map((o) => ({ ...o, key: Buffer.from(o.key), ...(o.type === 'put' ? { value: Buffer.from(o.value) } : {}) }) as WalOp));
  return out;
}

it('walOpGroups refuses what it does not know, and torn logs, with WalFormatError', async () => {
  const record = (type: number, payload: Buffer): Buffer => {
    const h = Buffer.alloc(7);
    h.writeUInt16LE(payload.length, 4);
    h[6] = type;
    return Buffer.concat([h, payload]);
  };
  const batch = (count: number, body: number[]): Buffer => {
    const b = Buffer.alloc(12);
    b.writeUInt32LE(count, 8);
    return Buffer.concat([b, Buffer.from(body)]);
  };
  // put "a" = "b", delete "c", single delete "d", log data "x" (not an entry)
  const good = batch(3, [1, 1, 0x61, 1, 0x62, 0, 1, 0x63, 7, 1, 0x64, 3, 1, 0x78]);
  expect(await readBytes(record(1, good))).toEqual([{ type: 'put', key: Buffer.from('a'), value: Buffer.from('b') }, { type: 'del', key: Buffer.from('c') }, { type: 'del', key: Buffer.from('d') }]);
  const bad: Array<[string, Buffer]> = [
    ['a merge', record(1, batch(1, [2, 1, 0x61, 1, 0x62]))],
    ['a column family', record(1, batch(1, [5, 1, 1, 0x61, 1, 0x62]))],
    ['a range deletion', record(1, batch(1, [0xf, 1, 0x61, 1, 0x62]))],
    ['a wrong count', record(1, batch(2, [1, 1, 0x61, 1, 0x62]))],
    ['a recycled-log record', record(5, good)],
    ['a last fragment alone', record(4, good)],
    ['a first fragment never ended', record(2, good)],
    ['a cut record', record(1, good).subarray(0, 12)],
    ['a string past its batch', record(1, batch(1, [1, 9, 0x61]))],
  ];
  for (const [what, buf] of bad) await expect(readBytes(buf), what).rejects.toThrow(WalFormatError);
});
