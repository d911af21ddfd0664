/** PostgreSQL wire framing and password authentication (server side), without a socket. */
import * as crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MessageQueue, QUEUED_BYTES_HIGH, QUEUED_MESSAGES_HIGH } from '../../sql/wire/message-queue';
import { md5Expected, scramServerFinal, scramServerFirst } from '../../sql/wire/pg-auth';
import { Parser } from 'pg-protocol/dist/parser';
import { backend, decodeFrontend, decodeStartup, FrameSplitter, MessageWriter, ProtocolError, SSL_REQUEST_CODE } from '../../sql/wire/pg-messages';

function typed(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

describe('sql wire framing', () => {
  it('sql wire: a startup packet split across chunks, then typed messages, are framed exactly', () => {
    const params = Buffer.from('user\0yugabyte\0database\0yugabyte\0\0');
    const startup = Buffer.alloc(8 + params.length);
    startup.writeInt32BE(startup.length, 0);
    startup.writeInt32BE(196608, 4);
    params.copy(startup, 8);
    const f = new FrameSplitter();
    f.push(startup.subarray(0, 3));
    expect(f.next()).toBeUndefined();
    f.push(startup.subarray(3));
    const m = f.next()!;
    expect(decodeStartup(m.body)).toEqual({ type: 'startup', params: { user: 'yugabyte', database: 'yugabyte' } });
    f.startupDone();
    const q = typed('Q', Buffer.from('select 1\0'));
    const bind = typed('B', Buffer.concat([Buffer.from('\0s1\0'), Buffer.from([0, 1, 0, 0, 0, 2, 0, 0, 0, 2]), Buffer.from('42'), Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0])]));
    f.push(Buffer.concat([q, bind.subarray(0, 7)]));
    const a = f.next()!;
    expect(decodeFrontend(a.type, a.body)).toEqual({ type: 'query', sql: 'select 1' });
    expect(f.next()).toBeUndefined();
    f.push(bind.subarray(7));
    const b = f.next()!;
    expect(decodeFrontend(b.type, b.body)).toEqual({ type: 'bind', portal: '', statement: 's1', paramFormats: [0], params: [Buffer.from('42'), null], resultFormats: [] });
  });

  it('sql wire: typed messages cut into chunks anywhere (a 1 MiB one in many) are framed exactly, in order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 20 }), fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 10 }), (sizes, cuts) => {
        const bodies = [...sizes, 1 << 20].map((n, i) => Buffer.alloc(n, i & 0xff));
        const stream = Buffer.concat(bodies.map((b) => typed('d', b)));
        const f = new FrameSplitter();
        f.startupDone();
        const got: Buffer[] = [];
        for (let at = 0, k = 0; at < stream.length; k++) {
          const n = Math.min(stream.length - at, cuts[k % cuts.length]! * (k % 7 === 0 ? 97 : 1));
          f.push(stream.subarray(at, at + n));
          at += n;
          for (let m = f.next(); m; m = f.next()) got.push(Buffer.from(m.body));
        }
        expect(got.length).toBe(bodies.length);
        got.forEach((b, i) => expect(b.equals(bodies[i]!)).toBe(true));
      }),
      { numRuns: 25 },
    );
  });

  it('sql wire: the message queue stops reading the socket above its high marks and reads on below half of them', () => {
    const flow = { paused: 0, resumed: 0 };
    const q = new MessageQueue<number>({ pause: () => flow.paused++, resume: () => flow.resumed++ }, (n) => n);
    for (let i = 0; i < QUEUED_MESSAGES_HIGH; i++) q.push(1);
    expect(flow.paused).toBe(0);
    q.push(1);
    expect(flow.paused).toBe(1);
    q.push(1);
    expect(flow.paused).toBe(1);
    const order: number[] = [];
    while (q.length > QUEUED_MESSAGES_HIGH / 2 + 1) order.push(q.shift()!);
    expect(flow.resumed).toBe(0);
    q.shift();
    expect(flow.resumed).toBe(1);
    // Bytes count too: one big message pauses, taking it resumes.
    const r = new MessageQueue<number>({ pause: () => flow.paused++, resume: () => flow.resumed++ }, (n) => n);
    r.push(QUEUED_BYTES_HIGH + 1);
    expect(flow.paused).toBe(2);
    expect(r.shift()).toBe(QUEUED_BYTES_HIGH + 1);
    expect(flow.resumed).toBe(2);
    expect(r.shift()).toBeUndefined();
  });

  it('sql wire: the message queue hands messages out in order across its compactions', () => {
    const q = new MessageQueue<number>({ pause: () => undefined, resume: () => undefined }, () => 1);
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 997; i++) q.push(next++);
      for (let i = 0; i < 900; i++) expect(q.shift()).toBe(expected++);
    }
    while (q.length > 0) expect(q.shift()).toBe(expected++);
    expect(expected).toBe(next);
  });

  it('sql wire: SSLRequest is recognised; a bad length or unknown message type is a protocol error', () => {
    const ssl = Buffer.alloc(8);
    ssl.writeInt32BE(8, 0);
    ssl.writeInt32BE(SSL_REQUEST_CODE, 4);
    const f = new FrameSplitter();
    f.push(ssl);
    expect(decodeStartup(f.next()!.body)).toEqual({ type: 'ssl' });
    const g = new FrameSplitter();
    g.push(Buffer.from('GET / HTTP/1.1\r\n'));
    expect(() => g.next()).toThrow(ProtocolError);
    expect(() => decodeFrontend('?'.charCodeAt(0), Buffer.alloc(0))).toThrow(ProtocolError);
  });

  it('sql wire: an ErrorResponse carries severity, SQLSTATE, message and position fields', () => {
    const e = backend.error({ severity: 'ERROR', code: '42601', message: 'syntax error', position: 7 });
    expect(e[0]).toBe('E'.charCodeAt(0));
    expect(e.readInt32BE(1)).toBe(e.length - 1);
    const fields = e.subarray(5).toString('utf8').split('\0');
    expect(fields).toEqual(['SERROR', 'VERROR', 'C42601', 'Msyntax error', 'P7', '', '']);
  });
});

describe('sql wire answers', () => {
  /** Messages as node-postgres's own protocol parser reads them. */
  function parsed(b: Buffer): Array<Record<string, unknown>> {
    const out: Array<Record<string, unknown>> = [];
    new Parser().parse(b, (m) => out.push(m as unknown as Record<string, unknown>));
    return out;
  }
  const field = fc.record({ name: fc.string({ maxLength: 20 }), tableOid: fc.nat(), columnAttr: fc.integer({ min: -1, max: 1600 }), typeOid: fc.nat(), typeSize: fc.integer({ min: -2, max: 32767 }), typeMod: fc.integer({ min: -1, max: 100_000 }) });

  it('sql wire: RowDescription, DataRow and CommandComplete written in one buffer are the bytes of the field-by-field writer, and node-postgres reads them back', () => {
    fc.assert(
      fc.property(fc.array(field, { maxLength: 6 }), fc.array(fc.option(fc.uint8Array({ maxLength: 40 }), { nil: null }), { maxLength: 6 }), fc.string({ maxLength: 30 }), fc.constantFrom<number[]>([], [1], [0, 1, 0]), (fields, values, tag, formats) => {
        const ref = new MessageWriter('T').int16(fields.length);
        fields.forEach((f, i) => ref.cstring(f.name).int32(f.tableOid).int16(f.columnAttr).int32(f.typeOid).int16(f.typeSize).int32(f.typeMod).int16(formats.length === 1 ? formats[0]! : (formats[i] ?? 0)));
        const rd = backend.rowDescription(fields, formats);
        expect(rd.equals(ref.build())).toBe(true);
        const bufs = values.map((v) => (v === null ? null : Buffer.from(v)));
        const row = new MessageWriter('D').int16(bufs.length);
        for (const v of bufs) if (v === null) row.int32(-1); else row.int32(v.length).bytes(v);
        const dr = backend.dataRow(bufs);
        expect(dr.equals(row.build())).toBe(true);
        const cc = backend.commandComplete(tag.replace(/\0/g, ''));
        expect(cc.equals(new MessageWriter('C').cstring(tag.replace(/\0/g, '')).build())).toBe(true);
        const ms = parsed(Buffer.concat([rd, dr, cc, backend.readyForQuery('T')]));
        expect(ms.map((m) => m['name'])).toEqual(['rowDescription', 'dataRow', 'commandComplete', 'readyForQuery']);
        expect((ms[0]!['fields'] as Array<{ name: string }>).map((f) => f.name)).toEqual(fields.map((f) => f.name));
        expect(ms[1]!['fieldCount']).toBe(bufs.length);
        expect(ms[3]!['status']).toBe('T');
      }),
      { numRuns: 300 },
    );
  });

  it('sql wire: the messages without fields are the same bytes on every call and as built field by field', () => {
    expect(backend.readyForQuery('I').equals(new MessageWriter('Z').int8(0x49).build())).toBe(true);
    expect(backend.readyForQuery('E').equals(new MessageWriter('Z').int8(0x45).build())).toBe(true);
    expect(backend.parseComplete()).toBe(backend.parseComplete());
    expect(parsed(Buffer.concat([backend.parseComplete(), backend.bindComplete(), backend.noData(), backend.emptyQuery(), backend.portalSuspended(), backend.closeComplete()])).map((m) => m['name'])).toEqual(['parseComplete', 'bindComplete', 'noData', 'emptyQuery', 'portalSuspended', 'closeComplete']);
  });
});

describe('sql password authentication', () => {
  it('sql auth: MD5 answer is md5(md5(password+user)+salt)', () => {
    const salt = Buffer.from([1, 2, 3, 4]);
    const inner = crypto.createHash('md5').update('secretyugabyte').digest('hex');
    const want = 'md5' + crypto.createHash('md5').update(Buffer.concat([Buffer.from(inner), salt])).digest('hex');
    expect(md5Expected('yugabyte', 'secret', salt)).toBe(want);
  });

  it('sql auth: SCRAM-SHA-256 accepts the right password (server signature verifies) and refuses a wrong one', () => {
    const client = (password: string): { ok: boolean; serverOk: boolean } => {
      const cnonce = crypto.randomBytes(12).toString('base64');
      const first = `n,,n=,r=${cnonce}`;
      const st = scramServerFirst(first);
      const attrs = Object.fromEntries(st.serverFirst.split(',').map((kv) => [kv[0], kv.slice(2)]));
      const salted = crypto.pbkdf2Sync(password, Buffer.from(attrs['s']!, 'base64'), Number(attrs['i']), 32, 'sha256');
      const clientKey = crypto.createHmac('sha256', salted).update('Client Key').digest();
      const storedKey = crypto.createHash('sha256').update(clientKey).digest();
      const finalNoProof = `c=biws,r=${attrs['r']}`;
      const authMessage = `n=,r=${cnonce},${st.serverFirst},${finalNoProof}`;
      const sig = crypto.createHmac('sha256', storedKey).update(authMessage).digest();
      const proof = Buffer.from(clientKey.map((b, i) => b ^ sig[i]!)).toString('base64');
      const v = scramServerFinal(st, 'secret', `${finalNoProof},p=${proof}`);
      const serverKey = crypto.createHmac('sha256', salted).update('Server Key').digest();
      const want = 'v=' + crypto.createHmac('sha256', serverKey).update(authMessage).digest('base64');
      return { ok: v !== undefined, serverOk: v === want };
    };
    expect(client('secret')).toEqual({ ok: true, serverOk: true });
    expect(client('wrong').ok).toBe(false);
  });
});
