/**
 * Hand-written codecs of RowService's messages (rpc/protos/rows.proto; docs/rows.md, "Coalesced on
 * the wire"), on rpc/pb-wire.ts: the same bytes and the same decoded objects as rpc/proto.ts's
 * protobufjs codec (proto3 defaults filled in, 64-bit integers as bigint, absent sub-messages
 * undefined), without its per-field object conversions. Scalars holding their default are not
 * written (proto3). Encoding bad input throws INVALID_ARGUMENT, decoding bad bytes MALFORMED_FRAME.
 */
import { DbError, ErrorCode } from '../common/errors';
import { big, PbReader, PbWriter, readDocKey, readRow, readValue, tag, writeDocKey, writeRow, writeValue, WT } from './pb-wire';
import type * as r from './row-types';
import type { Codec } from './types';

// ---- field helpers: a field is written only when it differs from its proto3 default ----------------

function str(w: PbWriter, field: number, v: string | undefined): void {
  if (v) {
    w.u32(tag(field, WT.LEN));
    w.string(String(v));
  }
}
function u32(w: PbWriter, field: number, v: number | undefined): void {
  if (v) {
    w.u32(tag(field, WT.VARINT));
    w.u32(v);
  }
}
function u64(w: PbWriter, field: number, v: bigint | number | undefined): void {
  const b = big(v);
  if (b !== 0n) {
    w.u32(tag(field, WT.VARINT));
    w.u64(b);
  }
}
function fx64(w: PbWriter, field: number, v: bigint | number | undefined): void {
  const b = big(v);
  if (b !== 0n) {
    w.u32(tag(field, WT.I64));
    w.fixed64(b);
  }
}
function bool(w: PbWriter, field: number, v: boolean | undefined): void {
  if (v) {
    w.u32(tag(field, WT.VARINT));
    w.bool(true);
  }
}

// ---- MutateRows -------------------------------------------------------------------------------------

function writeCondition(w: PbWriter, c: r.RowConditionPB): void {
  w.u32(tag(2, WT.LEN));
  const at = w.begin();
  u32(w, 1, c.columnId);
  str(w, 2, c.op);
  if (c.value) writeValue(w, 3, c.value);
  w.end(at);
}

function readCondition(rd: PbReader, end: number): r.RowConditionPB {
  const e = rd.len(end);
  const c: r.RowConditionPB = { columnId: 0, op: '' };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.VARINT)) c.columnId = rd.u32(e);
    else if (t === tag(2, WT.LEN)) c.op = rd.string(e);
    else if (t === tag(3, WT.LEN)) c.value = readValue(rd, e);
    else rd.skip(t & 7, e);
  }
  return c;
}

function writeMutation(w: PbWriter, m: r.CellMutationPB): void {
  w.u32(tag(3, WT.LEN));
  const at = w.begin();
  str(w, 1, m.type);
  u32(w, 2, m.columnId);
  if (m.value) writeValue(w, 3, m.value);
  const by = big(m.by);
  if (by !== 0n) {
    w.u32(tag(4, WT.VARINT));
    w.s64(by);
  }
  w.end(at);
}

function readMutation(rd: PbReader, end: number): r.CellMutationPB {
  const e = rd.len(end);
  const m: r.CellMutationPB = { type: '', columnId: 0, by: 0n };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) m.type = rd.string(e);
    else if (t === tag(2, WT.VARINT)) m.columnId = rd.u32(e);
    else if (t === tag(3, WT.LEN)) m.value = readValue(rd, e);
    else if (t === tag(4, WT.VARINT)) m.by = rd.s64(e);
    else rd.skip(t & 7, e);
  }
  return m;
}

function writeRowMutation(w: PbWriter, field: number, x: r.RowMutationPB): void {
  w.u32(tag(field, WT.LEN));
  const at = w.begin();
  if (x.key) writeDocKey(w, 1, x.key);
  for (const c of x.conditions ?? []) writeCondition(w, c);
  for (const m of x.mutations ?? []) writeMutation(w, m);
  str(w, 4, x.lockId);
  u64(w, 5, x.lockToken);
  bool(w, 6, x.unlockAfter);
  w.end(at);
}

function readRowMutation(rd: PbReader, end: number): r.RowMutationPB {
  const e = rd.len(end);
  const x: r.RowMutationPB = { conditions: [], mutations: [], lockId: '', lockToken: 0n, unlockAfter: false };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) x.key = readDocKey(rd, e);
    else if (t === tag(2, WT.LEN)) x.conditions!.push(readCondition(rd, e));
    else if (t === tag(3, WT.LEN)) x.mutations!.push(readMutation(rd, e));
    else if (t === tag(4, WT.LEN)) x.lockId = rd.string(e);
    else if (t === tag(5, WT.VARINT)) x.lockToken = rd.u64(e);
    else if (t === tag(6, WT.VARINT)) x.unlockAfter = rd.bool(e);
    else rd.skip(t & 7, e);
  }
  return x;
}

function encodeMutateRowsRequest(w: PbWriter, q: r.MutateRowsRequestPB): void {
  str(w, 1, q.tabletId);
  for (const x of q.rows ?? []) writeRowMutation(w, 2, x);
  u32(w, 3, q.schemaVersion);
  fx64(w, 4, q.propagatedHt);
  str(w, 5, q.clientId);
  u64(w, 6, q.requestId);
  u64(w, 7, q.minRunningRequestId);
  bool(w, 8, q.waitForLocks);
  for (const item of q.more ?? []) {
    w.u32(tag(9, WT.LEN));
    const at = w.begin();
    for (const x of item.rows ?? []) writeRowMutation(w, 1, x);
    u64(w, 2, item.requestId);
    w.end(at);
  }
}

function readMutateRowsItem(rd: PbReader, end: number): r.MutateRowsItemPB {
  const e = rd.len(end);
  const item = { rows: [] as r.RowMutationPB[], requestId: 0n };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) item.rows.push(readRowMutation(rd, e));
    else if (t === tag(2, WT.VARINT)) item.requestId = rd.u64(e);
    else rd.skip(t & 7, e);
  }
  return item;
}

function decodeMutateRowsRequest(rd: PbReader): r.MutateRowsRequestPB {
  const e = rd.buf.byteLength;
  const q = { tabletId: '', rows: [] as r.RowMutationPB[], schemaVersion: 0, propagatedHt: 0n, clientId: '', requestId: 0n, minRunningRequestId: 0n, waitForLocks: false, more: [] as r.MutateRowsItemPB[] };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) q.tabletId = rd.string(e);
    else if (t === tag(2, WT.LEN)) q.rows.push(readRowMutation(rd, e));
    else if (t === tag(3, WT.VARINT)) q.schemaVersion = rd.u32(e);
    else if (t === tag(4, WT.I64)) q.propagatedHt = rd.fixed64(e);
    else if (t === tag(5, WT.LEN)) q.clientId = rd.string(e);
    else if (t === tag(6, WT.VARINT)) q.requestId = rd.u64(e);
    else if (t === tag(7, WT.VARINT)) q.minRunningRequestId = rd.u64(e);
    else if (t === tag(8, WT.VARINT)) q.waitForLocks = rd.bool(e);
    else if (t === tag(9, WT.LEN)) q.more.push(readMutateRowsItem(rd, e));
    else rd.skip(t & 7, e);
  }
  return q;
}

function encodeMutateRowsResponse(w: PbWriter, s: r.MutateRowsResponsePB): void {
  bool(w, 1, s.applied);
  fx64(w, 2, s.writeHt);
  fx64(w, 3, s.propagatedHt);
  for (const row of s.results ?? []) writeRow(w, 4, row);
  for (const it of s.items ?? []) {
    w.u32(tag(5, WT.LEN));
    const at = w.begin();
    bool(w, 1, it.applied);
    fx64(w, 2, it.writeHt);
    for (const row of it.results ?? []) writeRow(w, 3, row);
    str(w, 4, it.code);
    str(w, 5, it.message);
    str(w, 6, it.detailsJson);
    w.end(at);
  }
}

function readMutateRowsResult(rd: PbReader, end: number): r.MutateRowsResultPB {
  const e = rd.len(end);
  const it = { applied: false, writeHt: 0n, results: [] as r.MutateRowsResultPB['results'] & object, code: '', message: '', detailsJson: '' };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.VARINT)) it.applied = rd.bool(e);
    else if (t === tag(2, WT.I64)) it.writeHt = rd.fixed64(e);
    else if (t === tag(3, WT.LEN)) it.results.push(readRow(rd, e));
    else if (t === tag(4, WT.LEN)) it.code = rd.string(e);
    else if (t === tag(5, WT.LEN)) it.message = rd.string(e);
    else if (t === tag(6, WT.LEN)) it.detailsJson = rd.string(e);
    else rd.skip(t & 7, e);
  }
  return it;
}

function decodeMutateRowsResponse(rd: PbReader): r.MutateRowsResponsePB {
  const e = rd.buf.byteLength;
  const s = { applied: false, writeHt: 0n, propagatedHt: 0n, results: [] as r.MutateRowsResponsePB['results'] & object, items: [] as r.MutateRowsResultPB[] };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.VARINT)) s.applied = rd.bool(e);
    else if (t === tag(2, WT.I64)) s.writeHt = rd.fixed64(e);
    else if (t === tag(3, WT.I64)) s.propagatedHt = rd.fixed64(e);
    else if (t === tag(4, WT.LEN)) s.results.push(readRow(rd, e));
    else if (t === tag(5, WT.LEN)) s.items.push(readMutateRowsResult(rd, e));
    else rd.skip(t & 7, e);
  }
  return s;
}

// ---- LockRow / RowLock ------------------------------------------------------------------------------

function encodeLockRowRequest(w: PbWriter, q: r.LockRowRequestPB): void {
  str(w, 1, q.tabletId);
  if (q.key) writeDocKey(w, 2, q.key);
  u32(w, 3, q.leaseMs);
  str(w, 4, q.holder);
  str(w, 5, q.lockId);
  bool(w, 6, q.wait);
  u32(w, 7, q.schemaVersion);
  fx64(w, 8, q.propagatedHt);
  for (const i of q.more ?? []) {
    w.u32(tag(9, WT.LEN));
    const at = w.begin();
    if (i.key) writeDocKey(w, 1, i.key);
    u32(w, 2, i.leaseMs);
    str(w, 3, i.holder);
    str(w, 4, i.lockId);
    w.end(at);
  }
}

function readLockRowItem(rd: PbReader, end: number): r.LockRowItemPB {
  const e = rd.len(end);
  const i: r.LockRowItemPB = { leaseMs: 0, holder: '', lockId: '' };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) i.key = readDocKey(rd, e);
    else if (t === tag(2, WT.VARINT)) i.leaseMs = rd.u32(e);
    else if (t === tag(3, WT.LEN)) i.holder = rd.string(e);
    else if (t === tag(4, WT.LEN)) i.lockId = rd.string(e);
    else rd.skip(t & 7, e);
  }
  return i;
}

function decodeLockRowRequest(rd: PbReader): r.LockRowRequestPB {
  const e = rd.buf.byteLength;
  const q: r.LockRowRequestPB & { more: r.LockRowItemPB[] } = { tabletId: '', leaseMs: 0, holder: '', lockId: '', wait: false, schemaVersion: 0, propagatedHt: 0n, more: [] };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) q.tabletId = rd.string(e);
    else if (t === tag(2, WT.LEN)) q.key = readDocKey(rd, e);
    else if (t === tag(3, WT.VARINT)) q.leaseMs = rd.u32(e);
    else if (t === tag(4, WT.LEN)) q.holder = rd.string(e);
    else if (t === tag(5, WT.LEN)) q.lockId = rd.string(e);
    else if (t === tag(6, WT.VARINT)) q.wait = rd.bool(e);
    else if (t === tag(7, WT.VARINT)) q.schemaVersion = rd.u32(e);
    else if (t === tag(8, WT.I64)) q.propagatedHt = rd.fixed64(e);
    else if (t === tag(9, WT.LEN)) q.more.push(readLockRowItem(rd, e));
    else rd.skip(t & 7, e);
  }
  return q;
}

function encodeRowLockRequest(w: PbWriter, q: r.RowLockRequestPB): void {
  str(w, 1, q.tabletId);
  if (q.key) writeDocKey(w, 2, q.key);
  str(w, 3, q.lockId);
  str(w, 4, q.action);
  u32(w, 5, q.leaseMs);
  u32(w, 6, q.schemaVersion);
  fx64(w, 7, q.propagatedHt);
  for (const i of q.more ?? []) {
    w.u32(tag(8, WT.LEN));
    const at = w.begin();
    if (i.key) writeDocKey(w, 1, i.key);
    str(w, 2, i.lockId);
    str(w, 3, i.action);
    u32(w, 4, i.leaseMs);
    w.end(at);
  }
}

function readRowLockItem(rd: PbReader, end: number): r.RowLockItemPB {
  const e = rd.len(end);
  const i: r.RowLockItemPB = { lockId: '', action: '', leaseMs: 0 };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) i.key = readDocKey(rd, e);
    else if (t === tag(2, WT.LEN)) i.lockId = rd.string(e);
    else if (t === tag(3, WT.LEN)) i.action = rd.string(e);
    else if (t === tag(4, WT.VARINT)) i.leaseMs = rd.u32(e);
    else rd.skip(t & 7, e);
  }
  return i;
}

function decodeRowLockRequest(rd: PbReader): r.RowLockRequestPB {
  const e = rd.buf.byteLength;
  const q: r.RowLockRequestPB & { more: r.RowLockItemPB[] } = { tabletId: '', lockId: '', action: '', leaseMs: 0, schemaVersion: 0, propagatedHt: 0n, more: [] };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) q.tabletId = rd.string(e);
    else if (t === tag(2, WT.LEN)) q.key = readDocKey(rd, e);
    else if (t === tag(3, WT.LEN)) q.lockId = rd.string(e);
    else if (t === tag(4, WT.LEN)) q.action = rd.string(e);
    else if (t === tag(5, WT.VARINT)) q.leaseMs = rd.u32(e);
    else if (t === tag(6, WT.VARINT)) q.schemaVersion = rd.u32(e);
    else if (t === tag(7, WT.I64)) q.propagatedHt = rd.fixed64(e);
    else if (t === tag(8, WT.LEN)) q.more.push(readRowLockItem(rd, e));
    else rd.skip(t & 7, e);
  }
  return q;
}

function encodeRowLockResponse(w: PbWriter, s: r.RowLockResponsePB): void {
  str(w, 1, s.lockId);
  u64(w, 2, s.token);
  fx64(w, 3, s.expiresHt);
  u32(w, 4, s.leaseMs);
  fx64(w, 5, s.propagatedHt);
  for (const it of s.items ?? []) {
    w.u32(tag(6, WT.LEN));
    const at = w.begin();
    str(w, 1, it.lockId);
    u64(w, 2, it.token);
    fx64(w, 3, it.expiresHt);
    u32(w, 4, it.leaseMs);
    str(w, 5, it.code);
    str(w, 6, it.message);
    str(w, 7, it.detailsJson);
    w.end(at);
  }
}

function readRowLockResult(rd: PbReader, end: number): r.RowLockResultPB {
  const e = rd.len(end);
  const it: r.RowLockResultPB = { lockId: '', token: 0n, expiresHt: 0n, leaseMs: 0, code: '', message: '', detailsJson: '' };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) it.lockId = rd.string(e);
    else if (t === tag(2, WT.VARINT)) it.token = rd.u64(e);
    else if (t === tag(3, WT.I64)) it.expiresHt = rd.fixed64(e);
    else if (t === tag(4, WT.VARINT)) it.leaseMs = rd.u32(e);
    else if (t === tag(5, WT.LEN)) it.code = rd.string(e);
    else if (t === tag(6, WT.LEN)) it.message = rd.string(e);
    else if (t === tag(7, WT.LEN)) it.detailsJson = rd.string(e);
    else rd.skip(t & 7, e);
  }
  return it;
}

function decodeRowLockResponse(rd: PbReader): r.RowLockResponsePB {
  const e = rd.buf.byteLength;
  const s: r.RowLockResponsePB & { items: r.RowLockResultPB[] } = { lockId: '', token: 0n, expiresHt: 0n, leaseMs: 0, propagatedHt: 0n, items: [] };
  while (rd.pos < e) {
    const t = rd.u32(e);
    if (t === tag(1, WT.LEN)) s.lockId = rd.string(e);
    else if (t === tag(2, WT.VARINT)) s.token = rd.u64(e);
    else if (t === tag(3, WT.I64)) s.expiresHt = rd.fixed64(e);
    else if (t === tag(4, WT.VARINT)) s.leaseMs = rd.u32(e);
    else if (t === tag(5, WT.I64)) s.propagatedHt = rd.fixed64(e);
    else if (t === tag(6, WT.LEN)) s.items.push(readRowLockResult(rd, e));
    else rd.skip(t & 7, e);
  }
  return s;
}

// ---- codecs -----------------------------------------------------------------------------------------

function codec<T>(name: string, enc: (w: PbWriter, v: T) => void, dec: (rd: PbReader) => T): Codec<T> {
  return {
    encode(v: T): Uint8Array {
      const w = new PbWriter();
      try {
        enc(w, v);
      } catch (e) {
        if (e instanceof DbError) throw e;
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot encode tessera.${name}: ${(e as Error).message}`, { type: `tessera.${name}` }, { cause: e });
      }
      return w.result();
    },
    decode(b: Uint8Array): T {
      try {
        return dec(new PbReader(b));
      } catch (e) {
        throw new DbError(ErrorCode.MALFORMED_FRAME, `payload does not decode as tessera.${name}: ${(e as Error).message}`, { type: `tessera.${name}` }, { cause: e });
      }
    },
  };
}

export const mutateRowsRequestCodec = codec<r.MutateRowsRequestPB>('MutateRowsRequestPB', encodeMutateRowsRequest, decodeMutateRowsRequest);
export const mutateRowsResponseCodec = codec<r.MutateRowsResponsePB>('MutateRowsResponsePB', encodeMutateRowsResponse, decodeMutateRowsResponse);
export const lockRowRequestCodec = codec<r.LockRowRequestPB>('LockRowRequestPB', encodeLockRowRequest, decodeLockRowRequest);
export const rowLockRequestCodec = codec<r.RowLockRequestPB>('RowLockRequestPB', encodeRowLockRequest, decodeRowLockRequest);
export const rowLockResponseCodec = codec<r.RowLockResponsePB>('RowLockResponsePB', encodeRowLockResponse, decodeRowLockResponse);
