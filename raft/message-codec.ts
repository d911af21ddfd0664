/**
 * Binary encoding of raft Message (all variants, including entries and snapshots) for the wire
 * (RaftEnvelopePB.message). Pure and allocation-light: one growing buffer per encode, no protobuf.
 *
 * Layout: [version u8][type u8] then the variant's fields in a fixed order. Integers are LEB128
 * varints (unsigned, computed with arithmetic so the full safe-integer range works), hints that may
 * be negative are zigzag varints, node ids are length-prefixed UTF-8, byte strings are
 * length-prefixed. Optional fields are preceded by a presence byte.
 *
 * Input comes off the network: decode() validates everything and throws DbError MALFORMED_FRAME on
 * bad bytes; it never reads past the buffer and never returns a partially decoded message.
 */
import { BinaryReader, BinaryWriter } from '../common/byte-codec';
import { DbError, ErrorCode } from '../common/errors';
import { NodeId } from '../common/ids';
import type { ConfState, Entry, EntryType, Message, Snapshot } from './types';

const VERSION = 1;

const TYPE_TAGS = ['append', 'appendResp', 'heartbeat', 'heartbeatResp', 'vote', 'voteResp', 'snapshot', 'timeoutNow'] as const;
const ENTRY_TYPES: readonly EntryType[] = ['normal', 'noop', 'confChange'];

/** Largest count of entries, voters or bytes a decoder accepts in one field (bounds allocation on garbage). */
const COUNT_MAX = 1 << 30;
/** Node ids whose encoding the writer keeps (a cluster has a handful; the cap bounds garbage). */
const ID_CACHE_MAX = 1024;

/** The shared writer (common/byte-codec.ts), with node ids' encodings cached. */
class Writer extends BinaryWriter {
  /** Encoded node ids (see str). */
  private static readonly ids = new Map<string, Uint8Array>();
  private static readonly enc = new TextEncoder();
  constructor(initial: number) {
    super(initial, 'raft codec');
  }
  f64(v: number): void {
    this.f64le(v);
  }
  override str(s: string): void {
    // Node ids: the same few strings in every message, so their encoding (a 2-byte varint length,
    // then UTF-8) is cached; ids are < 16384 bytes.
    let enc = Writer.ids.get(s);
    if (enc === undefined) {
      const utf8 = Writer.enc.encode(s);
      if (utf8.byteLength >= 1 << 14) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'raft codec: node id too long');
      enc = new Uint8Array(2 + utf8.byteLength);
      enc[0] = (utf8.byteLength % 0x80) | 0x80;
      enc[1] = Math.floor(utf8.byteLength / 0x80);
      enc.set(utf8, 2);
      if (Writer.ids.size >= ID_CACHE_MAX) Writer.ids.clear();
      Writer.ids.set(s, enc);
    }
    this.raw(enc);
  }
}

function malformed(why: string): DbError {
  return new DbError(ErrorCode.MALFORMED_FRAME, `malformed raft message: ${why}`);
}

/** The shared reader: MALFORMED_FRAME on garbage, counts bounded by COUNT_MAX. */
class Reader extends BinaryReader {
  constructor(buf: Uint8Array) {
    super(buf, malformed, 0, buf.byteLength, COUNT_MAX);
  }
  f64(): number {
    return this.f64le();
  }
}

function entriesSize(ents: readonly Entry[]): number {
  let n = 0;
  for (const e of ents) n += e.data.byteLength + 16;
  return n;
}

function writeEntries(w: Writer, ents: readonly Entry[]): void {
  w.uv(ents.length);
  for (const e of ents) {
    w.uv(e.term);
    w.uv(e.index);
    const t = ENTRY_TYPES.indexOf(e.type);
    if (t < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `raft codec: unknown entry type ${String(e.type)}`);
    w.u8(t);
    w.bytes(e.data);
  }
}

function readEntries(r: Reader): Entry[] {
  const n = r.count();
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) {
    const term = r.uv();
    const index = r.uv();
    const t = ENTRY_TYPES[r.u8()];
    if (t === undefined) throw malformed('unknown entry type');
    out.push({ term, index, type: t, data: r.bytes() });
  }
  return out;
}

function writeConf(w: Writer, c: ConfState): void {
  w.uv(c.voters.length);
  for (const v of c.voters) w.str(v);
  w.uv(c.learners.length);
  for (const v of c.learners) w.str(v);
}

function readConf(r: Reader): ConfState {
  const voters: NodeId[] = [];
  const nv = r.count();
  for (let i = 0; i < nv; i++) voters.push(NodeId(r.str()));
  const learners: NodeId[] = [];
  const nl = r.count();
  for (let i = 0; i < nl; i++) learners.push(NodeId(r.str()));
  return { voters, learners };
}

function writeSnapshot(w: Writer, s: Snapshot): void {
  w.uv(s.meta.index);
  w.uv(s.meta.term);
  writeConf(w, s.meta.conf);
  w.bytes(s.data);
}

function readSnapshot(r: Reader): Snapshot {
  const index = r.uv();
  const term = r.uv();
  const conf = readConf(r);
  return { meta: { index, term, conf }, data: r.bytes() };
}

function writeOptBytes(w: Writer, b: Uint8Array | undefined): void {
  if (b === undefined) w.u8(0);
  else {
    w.u8(1);
    w.bytes(b);
  }
}

function readOptBytes(r: Reader): Uint8Array | undefined {
  return r.bool() ? r.bytes() : undefined;
}

/** Optional numbers travel as float64 so fractional and negative values survive unchanged. */
function writeOptNumber(w: Writer, v: number | undefined): void {
  if (v === undefined) w.u8(0);
  else {
    w.u8(1);
    w.f64(v);
  }
}

function readOptNumber(r: Reader): number | undefined {
  return r.bool() ? r.f64() : undefined;
}

export function encodeMessage(m: Message): Uint8Array {
  const extra = m.type === 'append' ? entriesSize(m.entries) : m.type === 'snapshot' ? m.snapshot.data.byteLength + 64 : 0;
  // Room for both ids up front: growing the buffer would allocate and copy it once per message.
  const w = new Writer(64 + extra + 3 * (m.from.length + m.to.length));
  w.u8(VERSION);
  w.u8(TYPE_TAGS.indexOf(m.type));
  w.str(m.from);
  w.str(m.to);
  w.uv(m.term);
  switch (m.type) {
    case 'append':
      w.uv(m.prevIndex);
      w.uv(m.prevTerm);
      w.uv(m.commit);
      writeEntries(w, m.entries);
      // Flags byte: bit 0 leaseMs follows, bit 1 noAck (a plain presence byte before noAck existed).
      w.u8((m.leaseMs !== undefined ? 1 : 0) | (m.noAck ? 2 : 0));
      if (m.leaseMs !== undefined) w.f64(m.leaseMs);
      break;
    case 'appendResp':
      w.uv(m.index);
      w.u8(m.reject ? 1 : 0);
      w.sv(m.rejectHint);
      if (m.rejectTermHint === undefined) w.u8(0);
      else {
        w.u8(1);
        w.sv(m.rejectTermHint);
      }
      break;
    case 'heartbeat':
      w.uv(m.commit);
      writeOptBytes(w, m.context);
      writeOptNumber(w, m.leaseTick);
      break;
    case 'heartbeatResp':
      writeOptBytes(w, m.context);
      writeOptNumber(w, m.leaseTick);
      break;
    case 'vote':
      w.uv(m.lastIndex);
      w.uv(m.lastTerm);
      w.u8((m.pre ? 1 : 0) | (m.transfer ? 2 : 0));
      break;
    case 'voteResp':
      w.u8((m.reject ? 1 : 0) | (m.pre ? 2 : 0));
      break;
    case 'snapshot':
      writeSnapshot(w, m.snapshot);
      break;
    case 'timeoutNow':
      break;
  }
  return w.result();
}

// Long by design (docs/conventions.md): one switch over the format's kinds, a few lines each; the kinds belong side by side.
export function decodeMessage(b: Uint8Array): Message {
  const r = new Reader(b);
  const version = r.u8();
  if (version !== VERSION) throw malformed(`unknown version ${version}`);
  const type = TYPE_TAGS[r.u8()];
  if (type === undefined) throw malformed('unknown message type');
  const from = NodeId(r.str());
  const to = NodeId(r.str());
  const term = r.uv();
  let m: Message;
  switch (type) {
    case 'append': {
      const prevIndex = r.uv();
      const prevTerm = r.uv();
      const commit = r.uv();
      const entries = readEntries(r);
      const f = r.u8();
      if (f > 3) throw malformed('bad append flags');
      m = { type, from, to, term, prevIndex, prevTerm, entries, commit };
      if ((f & 1) !== 0) m.leaseMs = r.f64();
      if ((f & 2) !== 0) m.noAck = true;
      break;
    }
    case 'appendResp': {
      const index = r.uv();
      const reject = r.bool();
      const rejectHint = r.sv();
      m = { type, from, to, term, index, reject, rejectHint };
      if (r.bool()) m.rejectTermHint = r.sv();
      break;
    }
    case 'heartbeat': {
      const commit = r.uv();
      const context = readOptBytes(r);
      const leaseTick = readOptNumber(r);
      m = { type, from, to, term, commit };
      if (context !== undefined) m.context = context;
      if (leaseTick !== undefined) m.leaseTick = leaseTick;
      break;
    }
    case 'heartbeatResp': {
      const context = readOptBytes(r);
      const leaseTick = readOptNumber(r);
      m = { type, from, to, term };
      if (context !== undefined) m.context = context;
      if (leaseTick !== undefined) m.leaseTick = leaseTick;
      break;
    }
    case 'vote': {
      const lastIndex = r.uv();
      const lastTerm = r.uv();
      const f = r.u8();
      if (f > 3) throw malformed('bad vote flags');
      m = { type, from, to, term, lastIndex, lastTerm, pre: (f & 1) !== 0, transfer: (f & 2) !== 0 };
      break;
    }
    case 'voteResp': {
      const f = r.u8();
      if (f > 3) throw malformed('bad voteResp flags');
      m = { type, from, to, term, reject: (f & 1) !== 0, pre: (f & 2) !== 0 };
      break;
    }
    case 'snapshot':
      m = { type, from, to, term, snapshot: readSnapshot(r) };
      break;
    case 'timeoutNow':
      m = { type, from, to, term };
      break;
  }
  if (!r.done()) throw malformed('trailing bytes');
  return m;
}
