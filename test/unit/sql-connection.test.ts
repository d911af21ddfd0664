/**
 * PgConnection over a fake socket and a scripted session: answers leave in one write per wait for
 * the client, and a prepared statement's Describe(portal) reuses the columns of its last execution,
 * with PostgreSQL's 0A000 "cached plan must not change result type" when an execution's columns
 * differ from what was described.
 */
import { EventEmitter } from 'node:events';
import type * as net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { PgConnection, type ConnectionDeps } from '../../sql/wire/pg-connection';
import { loadParser } from '../../sql/sql-parser';
import type { SqlSession, StatementResult } from '../../sql/exec/session';
import type { OutputField } from '../../sql/exec/select';

class FakeSocket extends EventEmitter {
  writes: Buffer[] = [];
  writableNeedDrain = false;
  setNoDelay(): void {}
  pause(): void {}
  resume(): void {}
  write(b: Buffer): boolean {
    this.writes.push(Buffer.from(b));
    return true;
  }
  end(b?: Buffer): void {
    if (b) this.writes.push(Buffer.from(b));
  }
  destroy(): void {}
}

function msg(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const cstr = (s: string): Buffer => Buffer.from(`${s}\0`);
const i16 = (n: number): Buffer => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

function startup(): Buffer {
  const params = Buffer.from('user\0yugabyte\0database\0yugabyte\0\0');
  const b = Buffer.alloc(8 + params.length);
  b.writeInt32BE(b.length, 0);
  b.writeInt32BE(196608, 4);
  params.copy(b, 8);
  return b;
}

/** The message types of a run of backend bytes, in order. */
function types(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < bytes.length; at += 1 + bytes.readInt32BE(at + 1)) out.push(String.fromCharCode(bytes[at]!));
  return out;
}

const field = (name: string): OutputField => ({ name, type: 'int8', tableOid: 0, attnum: 0 });

function setup(): { socket: FakeSocket; session: { fields: OutputField[]; describes: number; executes: number } } {
  const socket = new FakeSocket();
  const state = { fields: [field('id'), field('a')], describes: 0, executes: 0 };
  const session = {
    info: { settings: new Map<string, string>() },
    status: () => 'I',
    cancel: () => undefined,
    close: async () => undefined,
    catalogGeneration: () => 0,
    describe: async () => {
      state.describes++;
      return state.fields;
    },
    execute: async (): Promise<StatementResult> => {
      state.executes++;
      await new Promise((r) => setImmediate(r)); // a read elsewhere: the answer is built across turns
      return { tag: 'SELECT 1', fields: state.fields, rows: [state.fields.map(() => 1n)] } as StatementResult;
    },
  } as unknown as SqlSession;
  const deps: ConnectionDeps = {
    openSession: () => session,
    password: '',
    authMethod: 'md5',
    cancel: () => undefined,
    register: () => ({ pid: 1, secret: 2 }),
    unregister: () => undefined,
    log: () => undefined,
  };
  void new PgConnection(socket as unknown as net.Socket, deps).run();
  return { socket, session: state };
}

/** Until the socket holds `n` writes (or 20 s pass): event-loop turns first, then short timers. */
async function settle(socket: FakeSocket, n: number): Promise<void> {
  const end = Date.now() + 20_000;
  for (let i = 0; socket.writes.length < n && Date.now() < end; i++) await new Promise((r) => (i < 200 ? setImmediate(r) : setTimeout(r, 2)));
}

const round = (): Buffer => Buffer.concat([msg('B', cstr(''), cstr('s1'), i16(0), i16(1), i32(1), Buffer.from('1'), i16(0)), msg('D', Buffer.from('P'), cstr('')), msg('E', cstr(''), i32(0)), msg('S')]);

describe('sql connection', () => {
  // The server loads the WebAssembly parser before it accepts a connection (sql-server.ts); so does
  // this test: on a loaded machine the load outlasted the first round, whose Parse then failed.
  beforeAll(() => loadParser());

  it('sql connection: a Bind/Describe/Execute/Sync round is answered in one write; Describe reuses the last execution\'s columns', async () => {
    const { socket, session } = setup();
    socket.emit('data', startup());
    await settle(socket, 1);
    expect(socket.writes).toHaveLength(1); // AuthenticationOk … ReadyForQuery together
    socket.emit('data', msg('P', cstr('s1'), cstr('select * from t where id = $1'), i16(0)));
    socket.emit('data', round());
    await settle(socket, 2);
    expect(socket.writes).toHaveLength(2);
    expect(types(socket.writes[1]!)).toEqual(['1', '2', 'T', 'D', 'C', 'Z']);
    expect(session.describes).toBe(1);
    socket.emit('data', round());
    await settle(socket, 3);
    expect(types(socket.writes[2]!)).toEqual(['2', 'T', 'D', 'C', 'Z']);
    expect(session.describes).toBe(1); // from the cache
    expect(session.executes).toBe(2);
  });

  it('sql connection: an execution whose columns differ from the described ones is refused with 0A000, and the next round describes anew', async () => {
    const { socket, session } = setup();
    socket.emit('data', startup());
    await settle(socket, 1);
    socket.emit('data', msg('P', cstr('s1'), cstr('select * from t where id = $1'), i16(0)));
    socket.emit('data', round());
    await settle(socket, 2);
    session.fields = [field('id'), field('a'), field('b')]; // the table gained a column elsewhere
    socket.emit('data', round());
    await settle(socket, 3);
    const third = socket.writes[2]!;
    expect(types(third)).toEqual(['2', 'T', 'E', 'Z']);
    expect(third.toString('latin1')).toContain('0A000');
    expect(third.toString('latin1')).toContain('cached plan must not change result type');
    socket.emit('data', round());
    await settle(socket, 4);
    expect(types(socket.writes[3]!)).toEqual(['2', 'T', 'D', 'C', 'Z']);
    expect(session.describes).toBe(2);
  });
});
