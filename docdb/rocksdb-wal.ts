/**
 * Reading RocksDB's write-ahead log from outside the database: what a split's children take from
 * their parent's memtable (docs/splitting.md, "How a split happens"). The `rocksdb` binding has no
 * flush that does not rewrite table files, and a RocksDB that replays a WAL at open writes it out as
 * one more L0 table file — which pushed a child's L0 over its compaction trigger, so that every
 * replica compacted the whole parent right after a split. Reading the WAL here instead lets each
 * child write only its own rows into its memtable.
 *
 * The formats (RocksDB 6.x, the binding's): a WAL is 32 KiB blocks of records, each with a 7-byte
 * header (masked CRC32C, length u16 LE, type: 1 full, 2 first, 3 middle, 4 last fragment); a block
 * whose tail is shorter than a header is zero padding. A record's payload is a WriteBatch: sequence
 * u64 LE, count u32 LE, then `count` entries of a type byte and varint-length-prefixed strings
 * (0 deletion: key; 1 value: key, value; 7 single deletion: key; 3 log data: blob, not counted).
 * Anything else (column families, merges, range deletions, 2PC markers, recycled-log records) is
 * not what tessera writes: the reader refuses it (WalFormatError), and the caller falls back to
 * letting RocksDB replay the log.
 */
import * as fs from 'node:fs';

const BLOCK_SIZE = 32768;
const HEADER_SIZE = 7;
const BATCH_HEADER_SIZE = 12;

export class WalFormatError extends Error {}

export type WalOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/** What a WAL's first `size` bytes hold: its write batches' operations in order. */
export interface WalContents {
  ops: WalOp[];
  batches: number;
}

function varint32(buf: Buffer, at: number): [number, number] {
  let v = 0;
  for (let shift = 0, i = at; shift <= 28 && i < buf.length; shift += 7, i++) {
    const b = buf[i]!;
    v |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [v >>> 0, i + 1];
  }
  throw new WalFormatError(`bad varint at ${at}`);
}

function lengthPrefixed(buf: Buffer, at: number): [Buffer, number] {
  const [len, from] = varint32(buf, at);
  if (from + len > buf.length) throw new WalFormatError(`a string of ${len} bytes at ${at} runs past its batch`);
  return [buf.subarray(from, from + len), from + len];
}

/** A WriteBatch's operations, appended to `out`. */
export function parseWriteBatch(batch: Buffer, out: WalOp[]): void {
  if (batch.length < BATCH_HEADER_SIZE) throw new WalFormatError(`a write batch of ${batch.length} bytes`);
  const count = batch.readUInt32LE(8);
  let at = BATCH_HEADER_SIZE;
  let seen = 0;
  while (at < batch.length) {
    const tag = batch[at++]!;
    let key: Buffer;
    if (tag === 1) {
      let value: Buffer;
      [key, at] = lengthPrefixed(batch, at);
      [value, at] = lengthPrefixed(batch, at);
      out.push({ type: 'put', key, value });
      seen++;
    } else if (tag === 0 || tag === 7) {
      [key, at] = lengthPrefixed(batch, at);
      out.push({ type: 'del', key });
      seen++;
    } else if (tag === 3) {
      [, at] = lengthPrefixed(batch, at);
    } else {
      throw new WalFormatError(`write batch entry of type 0x${tag.toString(16)}`);
    }
  }
  if (seen !== count) throw new WalFormatError(`write batch says ${count} entries, holds ${seen}`);
}

/** The records of a WAL's bytes, fragments joined: each is one write batch. */
function* records(buf: Buffer): Generator<Buffer> {
  let at = 0;
  let parts: Buffer[] | undefined;
  while (at < buf.length) {
    const left = BLOCK_SIZE - (at % BLOCK_SIZE);
    if (left < HEADER_SIZE) {
      at += left; // a block's trailer: padding
      continue;
    }
    if (at + HEADER_SIZE > buf.length) throw new WalFormatError(`a record header cut at ${at}`);
    const len = buf.readUInt16LE(at + 4);
    const type = buf[at + 6]!;
    const from = at + HEADER_SIZE;
    if (from + len > buf.length || len > left - HEADER_SIZE) throw new WalFormatError(`a record of ${len} bytes at ${at} runs past its block or the log`);
    const payload = buf.subarray(from, from + len);
    at = from + len;
    if (type === 1 && !parts) yield payload;
    else if (type === 2 && !parts) parts = [payload];
    else if (type === 3 && parts) parts.push(payload);
    else if (type === 4 && parts) {
      parts.push(payload);
      yield Buffer.concat(parts);
      parts = undefined;
    } else throw new WalFormatError(`a record of type ${type} at ${at - len - HEADER_SIZE}${parts ? ' inside a fragmented one' : ''}`);
  }
  if (parts) throw new WalFormatError('the log ends inside a fragmented record');
}

/** The operations in a WAL's bytes, in the order they were written. */
export function parseWal(buf: Buffer): WalContents {
  const ops: WalOp[] = [];
  let batches = 0;
  for (const r of records(buf)) {
    parseWriteBatch(r, ops);
    batches++;
  }
  return { ops, batches };
}

/** The first `size` bytes of a file (a WAL as it was when its database's writes were held back). */
export function readFilePrefix(file: string, size: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(size);
    for (let got = 0; got < size; ) {
      const n = fs.readSync(fd, buf, got, size - got, got);
      if (n === 0) throw new WalFormatError(`${file} holds ${got} bytes, not ${size}`);
      got += n;
    }
    return buf;
  } finally {
    fs.closeSync(fd);
  }
}

/** The operations in a WAL file's first `size` bytes. */
export function readWalFile(file: string, size: number): WalContents {
  return parseWal(readFilePrefix(file, size));
}
