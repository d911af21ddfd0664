/**
 * The row part of the tablet op encoding (tablet-op.ts describes the layout): the shared writer and
 * reader with tablet ops' tagged primitives, DocKeys, row ops and cell writes.
 */
import { BinaryReader, BinaryWriter } from '../../common/byte-codec';
import { DbError, ErrorCode } from '../../common/errors';
import { LAZY_STRING_BYTES_MIN, withLazyUtf8, type CellWrite, type ColumnWrite, type DocKey, type Primitive, type RowOp } from '../../docdb';

export { LAZY_STRING_BYTES_MIN };

/** The shared writer (common/byte-codec.ts) with tablet ops' tagged primitives; integers of 8 bytes are big-endian. */
export class Out extends BinaryWriter {
  constructor(size: number) {
    super(size, 'tablet op');
  }
  u64(v: bigint): void {
    this.u64be(v);
  }
  f64(v: number): void {
    this.f64be(v);
  }
  prim(v: Primitive): void {
    if (v === null) this.u8(0);
    else if (v === false) this.u8(1);
    else if (v === true) this.u8(2);
    else if (typeof v === 'bigint') {
      this.u8(3);
      this.i64be(v);
    } else if (typeof v === 'number') {
      this.u8(4);
      this.f64be(v);
    } else if (typeof v === 'string') {
      this.u8(5);
      this.str(v);
    } else {
      this.u8(6);
      this.bytes(v);
    }
  }
}

export function bad(why: string): DbError {
  return new DbError(ErrorCode.CORRUPTION, `undecodable tablet op: ${why}`);
}

/** The shared reader: CORRUPTION for what a log entry cannot be. */
export class In extends BinaryReader {
  constructor(b: Uint8Array) {
    super(b, bad);
  }
  u64(): bigint {
    return this.u64be();
  }
  f64(): number {
    return this.f64be();
  }
  prim(): Primitive {
    const t = this.u8();
    switch (t) {
      case 0:
        return null;
      case 1:
        return false;
      case 2:
        return true;
      case 3:
        return this.i64be();
      case 4:
        return this.f64be();
      case 5:
        return this.str();
      case 6:
        return this.bytes();
      default:
        throw bad(`primitive tag ${t}`);
    }
  }
}

export function writeKey(o: Out, k: DocKey): void {
  o.ensure(2);
  o.buf.writeUInt16BE(k.hash, o.pos);
  o.pos += 2;
  o.uv(k.hashed.length);
  for (const p of k.hashed) o.prim(p);
  o.uv(k.range.length);
  for (const p of k.range) o.prim(p);
}

export function readKey(i: In): DocKey {
  i.need(2);
  const hash = (i.u8() << 8) | i.u8();
  const hashed: Primitive[] = [];
  for (let n = i.uv(); n > 0; n--) hashed.push(i.prim());
  const range: Primitive[] = [];
  for (let n = i.uv(); n > 0; n--) range.push(i.prim());
  return { hash, hashed, range };
}

/** At least the bytes Out.prim writes for `v` (1 tag, a count of up to 9, the payload). */
function primBytes(v: Primitive): number {
  if (typeof v === 'string') return 10 + Buffer.byteLength(v);
  if (v instanceof Uint8Array) return 10 + v.byteLength;
  return 9;
}

/**
 * At least the bytes writeRowOps writes for `ops`: the writer is sized once, so a large value is
 * copied into it once (growing by doubling copied a 4 MiB batch of rows three times over and left
 * the encoded op in a buffer up to twice its size).
 */
export function rowOpsBytes(ops: readonly RowOp[]): number {
  let n = 9;
  for (const op of ops) {
    n += 1 + 2 + 18;
    for (const p of op.key.hashed) n += primBytes(p);
    for (const p of op.key.range) n += primBytes(p);
    if (op.type === 'upsert') {
      n += 18;
      for (const c of op.columns) n += 9 + (c.utf8 !== undefined ? 10 + c.utf8.byteLength : primBytes(c.value));
    }
    if (op.type === 'cells') for (const c of op.cells) n += 32 + (c.kind === 'put' ? primBytes(c.value) : 0);
  }
  return n;
}

const CELL_KINDS = ['put', 'deleteVersion', 'deleteColumn', 'deleteRow'] as const;

function writeCells(o: Out, cells: readonly CellWrite[]): void {
  o.uv(cells.length);
  for (const c of cells) {
    o.u8(CELL_KINDS.indexOf(c.kind));
    if (c.kind !== 'deleteRow') o.uv(c.columnId);
    o.u8(c.ht === undefined ? 0 : 1);
    if (c.ht !== undefined) o.u64(c.ht);
    if (c.kind === 'put') {
      o.prim(c.value);
      o.uv(c.ttlMs ?? 0);
    }
  }
}

function readCells(i: In): CellWrite[] {
  const out: CellWrite[] = [];
  for (let n = i.uv(); n > 0; n--) {
    const kind = CELL_KINDS[i.u8()];
    if (kind === undefined) throw bad('cell kind');
    const columnId = kind === 'deleteRow' ? -1 : i.uv();
    const ht = i.u8() === 1 ? i.u64() : undefined;
    const at = ht === undefined ? {} : { ht };
    if (kind === 'put') {
      const value = i.prim();
      if (value === null) throw bad('null cell value');
      const ttl = i.uv();
      out.push({ kind, columnId, value, ...at, ...(ttl > 0 ? { ttlMs: ttl } : {}) });
    } else if (kind === 'deleteVersion') {
      if (ht === undefined) throw bad('version delete without a time');
      out.push({ kind, columnId, ht });
    } else if (kind === 'deleteColumn') out.push({ kind, columnId, ...at });
    else out.push({ kind, ...at });
  }
  return out;
}

export function writeRowOps(o: Out, ops: readonly RowOp[]): void {
  o.uv(ops.length);
  for (const op of ops) {
    if (op.type === 'upsert') {
      o.u8(0);
      writeKey(o, op.key);
      o.uv(op.columns.length);
      for (const c of op.columns) {
        o.uv(c.columnId);
        if (c.utf8 !== undefined) {
          // A string kept as its bytes (sent as utf8Value, or read from a log entry): as Out.prim writes a string.
          o.u8(5);
          o.bytes(c.utf8);
        } else o.prim(c.value);
      }
      o.uv(op.ttlMs ?? 0);
    } else if (op.type === 'cells') {
      o.u8(2);
      writeKey(o, op.key);
      writeCells(o, op.cells);
    } else {
      o.u8(1);
      writeKey(o, op.key);
    }
  }
}

/**
 * One upsert column. A string of LAZY_STRING_BYTES_MIN bytes or more (the storage's bound too) is
 * read as a view of its bytes and decoded only if someone looks at it: the apply path writes the
 * bytes to RocksDB as they are (ColumnWrite.utf8), instead of every replica decoding each of the
 * blog's 1 MiB values into a string and encoding it back (docs/raft-write-path.md, "Large values").
 */
function readColumn(i: In): ColumnWrite {
  const columnId = i.uv();
  if (i.buf[i.pos] !== 5) return { columnId, value: i.prim() };
  const at = i.pos;
  i.pos++;
  const n = i.count();
  if (n < LAZY_STRING_BYTES_MIN) {
    i.pos = at;
    return { columnId, value: i.prim() };
  }
  i.need(n, 'truncated string');
  // A view: the entry's buffer is its own (a log read or a decoded message's copy) and never reused.
  const utf8 = i.buf.subarray(i.pos, i.pos + n);
  i.pos += n;
  return withLazyUtf8({ columnId }, utf8, (b) => new In(b).utf8(b.byteLength));
}

export function readRowOps(i: In): RowOp[] {
  const n = i.uv();
  const ops: RowOp[] = [];
  for (let k = 0; k < n; k++) {
    const t = i.u8();
    if (t === 0) {
      const key = readKey(i);
      const columns = [];
      for (let c = i.uv(); c > 0; c--) columns.push(readColumn(i));
      const ttl = i.uv();
      ops.push(ttl > 0 ? { type: 'upsert', key, columns, ttlMs: ttl } : { type: 'upsert', key, columns });
    } else if (t === 1) ops.push({ type: 'delete', key: readKey(i) });
    else if (t === 2) {
      const key = readKey(i);
      ops.push({ type: 'cells', key, cells: readCells(i) });
    }
    else throw bad(`row op type ${t}`);
  }
  return ops;
}
