/**
 * PostgreSQL v3 wire protocol framing: split the byte stream into messages, decode the frontend
 * messages tessera serves, and encode backend messages.
 *
 * Why not a library: `pg-protocol` (node-postgres) parses backend messages and serialises frontend
 * ones — the client's direction, the opposite of what a server needs. `pg-gateway` does the server's
 * startup and authentication but hands Parse/Bind/Execute to the caller as raw bytes, so the extended
 * protocol would still be decoded here; the framing is small and fixed by the protocol
 * (postgresql.org/docs/current/protocol-message-formats.html), so tessera keeps it in this one file.
 */

export const PROTOCOL_V3 = 196608;
export const SSL_REQUEST_CODE = 80877103;
export const GSSENC_REQUEST_CODE = 80877104;
export const CANCEL_REQUEST_CODE = 80877102;

/** Longest frontend message accepted (a 1 GiB value is PostgreSQL's limit; tessera's is lower). */
export const FRONTEND_MESSAGE_BYTES_MAX = 256 * 1024 * 1024;
/** Longest startup packet (PostgreSQL's MAX_STARTUP_PACKET_LENGTH). */
export const STARTUP_MESSAGE_BYTES_MAX = 10_000;

export type StartupMessage =
  | { type: 'startup'; params: Record<string, string> }
  | { type: 'ssl' }
  | { type: 'gssenc' }
  | { type: 'cancel'; pid: number; secret: number };

export type FrontendMessage =
  | { type: 'query'; sql: string }
  | { type: 'parse'; name: string; sql: string; paramTypes: number[] }
  | { type: 'bind'; portal: string; statement: string; paramFormats: number[]; params: Array<Buffer | null>; resultFormats: number[] }
  | { type: 'describe'; kind: 'S' | 'P'; name: string }
  | { type: 'execute'; portal: string; maxRows: number }
  | { type: 'close'; kind: 'S' | 'P'; name: string }
  | { type: 'sync' }
  | { type: 'flush' }
  | { type: 'terminate' }
  | { type: 'copyData'; data: Buffer }
  | { type: 'copyDone' }
  | { type: 'copyFail'; message: string }
  | { type: 'password'; data: Buffer };

/** A protocol violation: the connection is closed (08P01), nothing else is affected. */
export class ProtocolError extends Error {}

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}
  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  byte(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  cstring(): string {
    const end = this.buf.indexOf(0, this.pos);
    if (end < 0) throw new ProtocolError('string without terminator');
    const s = this.buf.toString('utf8', this.pos, end);
    this.pos = end + 1;
    return s;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  rest(): Buffer {
    return this.buf.subarray(this.pos);
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new ProtocolError('message shorter than its fields');
  }
}

export function decodeStartup(body: Buffer): StartupMessage {
  const r = new Reader(body);
  const code = r.int32();
  if (code === SSL_REQUEST_CODE) return { type: 'ssl' };
  if (code === GSSENC_REQUEST_CODE) return { type: 'gssenc' };
  if (code === CANCEL_REQUEST_CODE) return { type: 'cancel', pid: r.int32(), secret: r.int32() };
  if (code !== PROTOCOL_V3) throw new ProtocolError(`unsupported frontend protocol ${code >>> 16}.${code & 0xffff}: server supports 3.0`);
  const params: Record<string, string> = {};
  for (;;) {
    const k = r.cstring();
    if (k === '') break;
    params[k] = r.cstring();
  }
  return { type: 'startup', params };
}

export function decodeFrontend(type: number, body: Buffer): FrontendMessage {
  const r = new Reader(body);
  switch (String.fromCharCode(type)) {
    case 'Q':
      return { type: 'query', sql: r.cstring() };
    case 'P': {
      const name = r.cstring();
      const sql = r.cstring();
      const n = r.int16();
      const paramTypes = Array.from({ length: n }, () => r.int32());
      return { type: 'parse', name, sql, paramTypes };
    }
    case 'B': {
      const portal = r.cstring();
      const statement = r.cstring();
      const paramFormats = Array.from({ length: r.int16() }, () => r.int16());
      const params = Array.from({ length: r.int16() }, () => {
        const len = r.int32();
        return len < 0 ? null : Buffer.from(r.bytes(len));
      });
      const resultFormats = Array.from({ length: r.int16() }, () => r.int16());
      return { type: 'bind', portal, statement, paramFormats, params, resultFormats };
    }
    case 'D':
    case 'C': {
      const kind = String.fromCharCode(r.byte());
      if (kind !== 'S' && kind !== 'P') throw new ProtocolError(`invalid ${type === 0x44 ? 'DESCRIBE' : 'CLOSE'} message subtype ${kind}`);
      return { type: type === 0x44 ? 'describe' : 'close', kind, name: r.cstring() };
    }
    case 'E':
      return { type: 'execute', portal: r.cstring(), maxRows: r.int32() };
    case 'S':
      return { type: 'sync' };
    case 'H':
      return { type: 'flush' };
    case 'X':
      return { type: 'terminate' };
    case 'd':
      return { type: 'copyData', data: Buffer.from(r.rest()) };
    case 'c':
      return { type: 'copyDone' };
    case 'f':
      return { type: 'copyFail', message: r.cstring() };
    case 'p':
      return { type: 'password', data: Buffer.from(r.rest()) };
    default:
      throw new ProtocolError(`invalid frontend message type ${type}`);
  }
}

/**
 * Splits a byte stream into messages: the first is a startup-style packet (no type byte) until
 * `startupDone()`, then typed messages. Bounded: a length past the limit is a protocol violation.
 */
export class FrameSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private startup = true;

  startupDone(): void {
    this.startup = false;
  }

  push(data: Buffer): void {
    this.chunks.push(data);
    this.buffered += data.length;
  }

  /** The next whole message, or undefined when more bytes are needed. */
  next(): { type: number; body: Buffer } | undefined {
    const head = this.startup ? 4 : 5;
    if (this.buffered < head) return undefined;
    // Only the header is made contiguous until the whole message is here: a large message arriving
    // in many chunks is copied once, not once per chunk.
    if (this.chunks[0]!.length < head) this.chunks = [Buffer.concat(this.chunks)];
    const first = this.chunks[0]!;
    const type = this.startup ? 0 : first[0]!;
    const len = first.readInt32BE(this.startup ? 0 : 1);
    const max = this.startup ? STARTUP_MESSAGE_BYTES_MAX : FRONTEND_MESSAGE_BYTES_MAX;
    if (len < 4 || len > max) throw new ProtocolError(this.startup ? `invalid length of startup packet ${len}` : `invalid message length ${len}`);
    const total = len + (this.startup ? 0 : 1);
    if (this.buffered < total) return undefined;
    const buf = first.length >= total ? first : this.flatten();
    const body = buf.subarray(head, total);
    if (buf.length > total) this.chunks[0] = buf.subarray(total);
    else this.chunks.shift();
    this.buffered -= total;
    return { type, body };
  }

  private flatten(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!;
  }
}

/** Builds one backend message: type byte, length, fields. */
export class MessageWriter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(private readonly type: string) {}
  int8(v: number): this {
    return this.push(Buffer.from([v & 0xff]));
  }
  int16(v: number): this {
    const b = Buffer.allocUnsafe(2);
    b.writeInt16BE(v);
    return this.push(b);
  }
  int32(v: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32BE(v | 0);
    return this.push(b);
  }
  cstring(s: string): this {
    return this.push(Buffer.from(s + '\0', 'utf8'));
  }
  bytes(b: Buffer): this {
    return this.push(b);
  }
  private push(b: Buffer): this {
    this.parts.push(b);
    this.size += b.length;
    return this;
  }
  build(): Buffer {
    const head = Buffer.allocUnsafe(5);
    head.write(this.type, 0, 'latin1');
    head.writeInt32BE(this.size + 4, 1);
    return Buffer.concat([head, ...this.parts], this.size + 5);
  }
}

export interface FieldDescription {
  name: string;
  tableOid: number;
  columnAttr: number;
  typeOid: number;
  typeSize: number;
  typeMod: number;
}

export interface ErrorFields {
  severity: 'ERROR' | 'FATAL' | 'NOTICE' | 'WARNING';
  code: string;
  message: string;
  detail?: string;
  hint?: string;
  position?: number;
}

/** A message without fields (built once: the same bytes every time, never written to). */
function empty(type: string): Buffer {
  return new MessageWriter(type).build();
}

const READY: Record<'I' | 'T' | 'E', Buffer> = { I: new MessageWriter('Z').int8(0x49).build(), T: new MessageWriter('Z').int8(0x54).build(), E: new MessageWriter('Z').int8(0x45).build() };
const PARSE_COMPLETE = empty('1');
const BIND_COMPLETE = empty('2');
const CLOSE_COMPLETE = empty('3');
const NO_DATA = empty('n');
const PORTAL_SUSPENDED = empty('s');
const EMPTY_QUERY = empty('I');

/**
 * The messages of every statement's answer (RowDescription, DataRow, CommandComplete) are written
 * into one buffer sized up front: MessageWriter's buffer per field and the concatenation were a
 * visible part of the SQL node's time under pgbench -S (docs/sql.md "Answers on the wire").
 */
function rowDescriptionBytes(fields: FieldDescription[], formats: number[]): Buffer {
  const names = fields.map((f) => Buffer.from(f.name, 'utf8'));
  let size = 7;
  for (const n of names) size += n.length + 19;
  const b = Buffer.allocUnsafe(size);
  b[0] = 0x54; // 'T'
  b.writeInt32BE(size - 1, 1);
  b.writeInt16BE(fields.length, 5);
  let at = 7;
  fields.forEach((f, i) => {
    at += names[i]!.copy(b, at);
    b[at++] = 0;
    at = b.writeInt32BE(f.tableOid | 0, at);
    at = b.writeInt16BE(f.columnAttr, at);
    at = b.writeInt32BE(f.typeOid | 0, at);
    at = b.writeInt16BE(f.typeSize, at);
    at = b.writeInt32BE(f.typeMod | 0, at);
    at = b.writeInt16BE(formats.length === 1 ? formats[0]! : (formats[i] ?? 0), at);
  });
  return b;
}

function dataRowBytes(values: Array<Buffer | null>): Buffer {
  let size = 7;
  for (const v of values) size += 4 + (v === null ? 0 : v.length);
  const b = Buffer.allocUnsafe(size);
  b[0] = 0x44; // 'D'
  b.writeInt32BE(size - 1, 1);
  b.writeInt16BE(values.length, 5);
  let at = 7;
  for (const v of values) {
    if (v === null) at = b.writeInt32BE(-1, at);
    else {
      at = b.writeInt32BE(v.length, at);
      at += v.copy(b, at);
    }
  }
  return b;
}

function commandCompleteBytes(tag: string): Buffer {
  const len = Buffer.byteLength(tag, 'utf8');
  const b = Buffer.allocUnsafe(len + 6);
  b[0] = 0x43; // 'C'
  b.writeInt32BE(len + 5, 1);
  b.write(tag, 5, 'utf8');
  b[len + 5] = 0;
  return b;
}

export const backend = {
  authOk: (): Buffer => new MessageWriter('R').int32(0).build(),
  authMd5: (salt: Buffer): Buffer => new MessageWriter('R').int32(5).bytes(salt).build(),
  authSasl: (mechanisms: string[]): Buffer => {
    const w = new MessageWriter('R').int32(10);
    for (const m of mechanisms) w.cstring(m);
    return w.int8(0).build();
  },
  authSaslContinue: (data: string): Buffer => new MessageWriter('R').int32(11).bytes(Buffer.from(data)).build(),
  authSaslFinal: (data: string): Buffer => new MessageWriter('R').int32(12).bytes(Buffer.from(data)).build(),
  parameterStatus: (k: string, v: string): Buffer => new MessageWriter('S').cstring(k).cstring(v).build(),
  backendKeyData: (pid: number, secret: number): Buffer => new MessageWriter('K').int32(pid).int32(secret).build(),
  readyForQuery: (status: 'I' | 'T' | 'E'): Buffer => READY[status],
  parseComplete: (): Buffer => PARSE_COMPLETE,
  bindComplete: (): Buffer => BIND_COMPLETE,
  closeComplete: (): Buffer => CLOSE_COMPLETE,
  noData: (): Buffer => NO_DATA,
  portalSuspended: (): Buffer => PORTAL_SUSPENDED,
  emptyQuery: (): Buffer => EMPTY_QUERY,
  commandComplete: commandCompleteBytes,
  parameterDescription: (oids: number[]): Buffer => {
    const w = new MessageWriter('t').int16(oids.length);
    for (const o of oids) w.int32(o);
    return w.build();
  },
  rowDescription: (fields: FieldDescription[], formats: number[] = []): Buffer => rowDescriptionBytes(fields, formats),
  dataRow: dataRowBytes,
  error: (f: ErrorFields): Buffer => {
    const w = new MessageWriter(f.severity === 'NOTICE' || f.severity === 'WARNING' ? 'N' : 'E');
    w.int8(0x53).cstring(f.severity).int8(0x56).cstring(f.severity).int8(0x43).cstring(f.code).int8(0x4d).cstring(f.message);
    if (f.detail) w.int8(0x44).cstring(f.detail);
    if (f.hint) w.int8(0x48).cstring(f.hint);
    if (f.position !== undefined) w.int8(0x50).cstring(String(f.position));
    return w.int8(0).build();
  },
  copyInResponse: (columns: number, binary = false): Buffer => {
    const w = new MessageWriter('G').int8(binary ? 1 : 0).int16(columns);
    for (let i = 0; i < columns; i++) w.int16(0);
    return w.build();
  },
  copyOutResponse: (columns: number): Buffer => {
    const w = new MessageWriter('H').int8(0).int16(columns);
    for (let i = 0; i < columns; i++) w.int16(0);
    return w.build();
  },
  copyData: (data: Buffer): Buffer => new MessageWriter('d').bytes(data).build(),
  copyDone: (): Buffer => new MessageWriter('c').build(),
};
