/**
 * The Transport compliance suite: the same behaviour checked against every implementation
 * (WebSocket over loopback, simulated network). A harness hides how time and delivery move.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode, isDbError } from '../../common';
import { defineMethod, defineOneway } from '../../rpc/proto';
import type { Codec, MethodDef, RpcClient, RpcServer, Transport } from '../../rpc/types';

export interface EchoPB {
  text: string;
  data: Uint8Array;
  n: bigint;
  u: bigint;
  stamps: bigint[];
  children: EchoPB[];
  mood: string;
  inner?: EchoPB;
  delayMs: number;
  replyBytes: number;
  i32: number;
  sf: bigint;
  i64: bigint;
}

/** What a caller may send: any subset of fields, recursively. */
export type EchoReq = Partial<Omit<EchoPB, 'children' | 'inner'>> & { children?: EchoReq[]; inner?: EchoReq };

export const ECHO = defineMethod<EchoReq, EchoPB>('EchoService', 'Echo', 'EchoPB', 'EchoPB');
export const ECHO_B = defineMethod<EchoReq, EchoPB>('OtherService', 'Echo', 'EchoPB', 'EchoPB');
export const FAIL = defineMethod<EchoReq, EchoPB>('EchoService', 'Fail', 'EchoPB', 'EchoPB');
export const HANG = defineMethod<EchoReq, EchoPB>('EchoService', 'Hang', 'EchoPB', 'EchoPB');
export const MISSING = defineMethod<EchoReq, EchoPB>('EchoService', 'NoSuchMethod', 'EchoPB', 'EchoPB');
export const NOTE = defineOneway<EchoReq>('EchoService', 'Note', 'EchoPB');

/** Bytes that are not a valid EchoPB (a length-delimited field running past the end). */
const garbageCodec: Codec<EchoReq> = {
  encode: () => Uint8Array.from([0x0a, 0x7f, 0x01]),
  decode: () => ({}),
};
export const ECHO_GARBAGE: MethodDef<EchoReq, EchoPB> = { ...ECHO, req: garbageCodec };

export interface TransportHarness {
  /** A transport for one node; messageBytesMax overrides the size limit of everything it creates. */
  transport(node: number, opts?: { messageBytesMax?: number }): Transport;
  /** Host to bind a server of `node` to, and the port to ask for (0 = any). */
  bindHost(node: number): string;
  /** Drive delivery/time until `p` settles (simulated) or just await it (real). */
  drive<T>(p: Promise<T>): Promise<T>;
  /** Wait (bounded) until `cond` holds, moving time/delivery along. */
  until(cond: () => boolean, what: string): Promise<void>;
  /** Let `ms` of (real or simulated) time pass. */
  pause(ms: number): Promise<void>;
  /** The clock RpcContext.deadlineMonoMs is measured on. */
  nowMs(): number;
  cleanup(): Promise<void>;
}

export interface EchoServer {
  server: RpcServer;
  notes: Array<EchoReq>;
  release(): void;
}

/** Start a server with the echo services of this suite. */
export async function startEchoServer(t: Transport, host: string, port = 0): Promise<EchoServer> {
  const server = t.createServer({ host, port });
  const notes: Array<EchoReq> = [];
  const hanging: Array<() => void> = [];
  server.handle(ECHO, async (req) => {
    if (req.replyBytes) return { ...req, data: new Uint8Array(req.replyBytes) } as EchoPB;
    return req as EchoPB;
  });
  server.handle(ECHO_B, async (req) => ({ ...req, text: `B:${req.text ?? ''}` }) as EchoPB);
  server.handle(FAIL, async (req) => {
    if (req.text === 'plain') throw new Error('boom (plain exception)');
    throw new DbError(ErrorCode.NOT_THE_LEADER, 'not the leader here', { leaderHint: 'ts-2', term: 7 });
  });
  server.handle(HANG, (req, ctx) => {
    notes.push({ ...req, text: req.text === 'slow' ? 'deadline' : req.text, n: BigInt(Math.round(ctx.deadlineMonoMs)) });
    return new Promise<EchoPB>((resolve) => hanging.push(() => resolve(req as EchoPB)));
  });
  server.onOneway(NOTE, (msg) => {
    notes.push(msg);
  });
  await server.start();
  return { server, notes, release: () => hanging.splice(0).forEach((f) => f()) };
}

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<DbError> {
  try {
    await p;
  } catch (e) {
    expect(isDbError(e), `expected DbError ${code}, got ${String(e)}`).toBe(true);
    expect((e as DbError).code).toBe(code);
    return e as DbError;
  }
  throw new Error(`expected ${code}, but the call succeeded`);
}

export function runTransportCompliance(name: string, makeHarness: () => TransportHarness): void {
  describe(`${name}: Transport compliance`, () => {
    let h: TransportHarness;
    const closers: Array<() => Promise<void>> = [];
    const setup = async (opts?: { messageBytesMax?: number }): Promise<{ es: EchoServer; client: RpcClient; addr: string }> => {
      h = makeHarness();
      const es = await startEchoServer(h.transport(0, opts), h.bindHost(0));
      const client = h.transport(1, opts).createClient();
      closers.push(async () => {
        es.release();
        await client.close();
        await es.server.stop();
        await h.cleanup();
      });
      return { es, client, addr: es.server.address };
    };
    afterEach(async () => {
      for (const c of closers.splice(0)) await c();
    });

    it(`${name}: round trip keeps every field type (bigint, bytes, enums, nested, repeated)`, async () => {
      const { client, addr } = await setup();
      const req: EchoReq = {
        text: 'héllo',
        data: Uint8Array.from([0, 1, 2, 255]),
        n: -(2n ** 62n),
        u: 2n ** 64n - 1n,
        stamps: [1n, 2n ** 63n],
        children: [{ text: 'child', n: 5n }],
        mood: 'ECHO_LOUD',
        inner: { text: 'inner', i64: -3n },
        i32: -7,
        sf: -(2n ** 63n),
      };
      const r = await h.drive(client.call(addr, ECHO, req, { timeoutMs: 5000 }));
      expect(r.text).toBe('héllo');
      expect([...r.data]).toEqual([0, 1, 2, 255]);
      expect(r.n).toBe(-(2n ** 62n));
      expect(r.u).toBe(2n ** 64n - 1n);
      expect(r.stamps).toEqual([1n, 2n ** 63n]);
      expect(r.children[0]!.text).toBe('child');
      expect(r.children[0]!.n).toBe(5n);
      expect(r.children[0]!.stamps).toEqual([]);
      expect(r.mood).toBe('ECHO_LOUD');
      expect(r.inner!.i64).toBe(-3n);
      expect(r.inner!.inner).toBeUndefined();
      expect(r.i32).toBe(-7);
      expect(r.sf).toBe(-(2n ** 63n));
      expect(r.i64).toBe(0n);
    });

    it(`${name}: many services share one server and one client`, async () => {
      const { client, addr } = await setup();
      const calls: Array<Promise<EchoPB>> = [];
      for (let i = 0; i < 20; i++) calls.push(client.call(addr, i % 2 ? ECHO_B : ECHO, { text: `m${i}` }, { timeoutMs: 5000 }));
      const rs = await h.drive(Promise.all(calls));
      rs.forEach((r, i) => expect(r.text).toBe(i % 2 ? `B:m${i}` : `m${i}`));
    });

    it(`${name}: one-way messages arrive in order on a healthy link`, async () => {
      const { es, client, addr } = await setup();
      // A call first so the connection is up (one-way sends are best effort while connecting).
      await h.drive(client.call(addr, ECHO, { text: 'warm' }, { timeoutMs: 5000 }));
      for (let i = 0; i < 50; i++) client.send(addr, NOTE, { text: `note${i}`, u: BigInt(i) });
      await h.until(() => es.notes.length >= 50, '50 one-way messages');
      expect(es.notes.map((n) => n.text)).toEqual(Array.from({ length: 50 }, (_, i) => `note${i}`));
      expect(es.notes[49]!.u).toBe(49n);
    });

    it(`${name}: a call past its deadline fails with TIMED_OUT and the server sees the deadline`, async () => {
      const { es, client, addr } = await setup();
      const before = h.nowMs();
      await expectCode(h.drive(client.call(addr, HANG, { text: 'slow' }, { timeoutMs: 100 })), ErrorCode.TIMED_OUT);
      const seen = es.notes.find((n) => n.text === 'deadline');
      expect(seen).toBeDefined();
      expect(Number(seen!.n)).toBeGreaterThanOrEqual(Math.floor(before) + 99);
      expect(Number(seen!.n)).toBeLessThanOrEqual(Math.ceil(h.nowMs()) + 200);
      // serverTimeoutMs: the caller stops waiting after timeoutMs, the server works to the longer deadline.
      const before2 = h.nowMs();
      await expectCode(h.drive(client.call(addr, HANG, { text: 'long' }, { timeoutMs: 100, serverTimeoutMs: 60_000 })), ErrorCode.TIMED_OUT);
      const long = es.notes.find((n) => n.text === 'long');
      expect(Number(long!.n)).toBeGreaterThanOrEqual(Math.floor(before2) + 59_000);
      // The connection still works after a timeout (the late answer is ignored).
      es.release();
      const r = await h.drive(client.call(addr, ECHO, { text: 'after' }, { timeoutMs: 5000 }));
      expect(r.text).toBe('after');
    });

    it(`${name}: a timed-out call says whether the server was heard from meanwhile (alive and slow vs silent)`, async () => {
      const { es, client, addr } = await setup();
      await h.drive(client.call(addr, ECHO, { text: 'warm' }, { timeoutMs: 5000 }));
      // Silent: nothing comes back on the connection during the call.
      const silent = await h.drive(client.call(addr, HANG, { text: 'slow' }, { timeoutMs: 100 })).catch((e: unknown) => e as DbError);
      expect(silent).toMatchObject({ code: ErrorCode.TIMED_OUT, details: { heard: false } });
      // Slow but alive: another call's answer arrives while this one waits.
      const waiting = client.call(addr, HANG, { text: 'slow' }, { timeoutMs: 300 }).catch((e: unknown) => e as DbError);
      await h.drive(client.call(addr, ECHO, { text: 'meanwhile' }, { timeoutMs: 5000 }));
      expect(await h.drive(waiting)).toMatchObject({ code: ErrorCode.TIMED_OUT, details: { heard: true } });
      es.release();
    });

    it(`${name}: a handler's DbError reaches the caller with code, details and retryability`, async () => {
      const { client, addr } = await setup();
      const e = await expectCode(h.drive(client.call(addr, FAIL, { text: 'x' }, { timeoutMs: 5000 })), ErrorCode.NOT_THE_LEADER);
      expect(e.details).toEqual({ leaderHint: 'ts-2', term: 7 });
      expect(e.retryable).toBe(true);
      const e2 = await expectCode(h.drive(client.call(addr, FAIL, { text: 'plain' }, { timeoutMs: 5000 })), ErrorCode.INTERNAL);
      expect(e2.message).toContain('boom');
      const r = await h.drive(client.call(addr, ECHO, { text: 'still up' }, { timeoutMs: 5000 }));
      expect(r.text).toBe('still up');
    });

    it(`${name}: unknown method gives UNKNOWN_METHOD, undecodable request gives MALFORMED_FRAME`, async () => {
      const { client, addr } = await setup();
      await expectCode(h.drive(client.call(addr, MISSING, { text: 'x' }, { timeoutMs: 5000 })), ErrorCode.UNKNOWN_METHOD);
      await expectCode(h.drive(client.call(addr, ECHO_GARBAGE, { text: 'x' }, { timeoutMs: 5000 })), ErrorCode.MALFORMED_FRAME);
      const r = await h.drive(client.call(addr, ECHO, { text: 'ok' }, { timeoutMs: 5000 }));
      expect(r.text).toBe('ok');
    });

    it(`${name}: while starting, a method not registered yet is a retryable SERVICE_UNAVAILABLE; registered ones serve`, async () => {
      const { es, client, addr } = await setup();
      es.server.setStarting('opening the catalog');
      const e = await expectCode(h.drive(client.call(addr, MISSING, { text: 'x' }, { timeoutMs: 5000 })), ErrorCode.SERVICE_UNAVAILABLE);
      expect(e.message).toBe('opening the catalog');
      expect(e.retryable).toBe(true);
      expect((await h.drive(client.call(addr, ECHO, { text: 'early' }, { timeoutMs: 5000 }))).text).toBe('early');
      es.server.setStarting(undefined);
      await expectCode(h.drive(client.call(addr, MISSING, { text: 'x' }, { timeoutMs: 5000 })), ErrorCode.UNKNOWN_METHOD);
    });

    it(`${name}: 1000 calls in flight are each answered with their own response`, async () => {
      const { client, addr } = await setup();
      const calls = Array.from({ length: 1000 }, (_, i) => client.call(addr, ECHO, { text: `c${i}`, n: BigInt(i) }, { timeoutMs: 30_000 }));
      const rs = await h.drive(Promise.all(calls));
      rs.forEach((r, i) => {
        expect(r.text).toBe(`c${i}`);
        expect(r.n).toBe(BigInt(i));
      });
    });

    it(`${name}: oversized request and response fail with MESSAGE_TOO_LARGE; the server keeps serving`, async () => {
      const { client, addr } = await setup({ messageBytesMax: 4096 });
      await expectCode(h.drive(client.call(addr, ECHO, { data: new Uint8Array(5000) }, { timeoutMs: 5000 })), ErrorCode.MESSAGE_TOO_LARGE);
      await expectCode(h.drive(client.call(addr, ECHO, { replyBytes: 8000 }, { timeoutMs: 5000 })), ErrorCode.MESSAGE_TOO_LARGE);
      const r = await h.drive(client.call(addr, ECHO, { data: new Uint8Array(3000) }, { timeoutMs: 5000 }));
      expect(r.data.length).toBe(3000);
    });

    it(`${name}: calls to a stopped server fail fast with retryable NETWORK_ERROR; after restart calls succeed`, async () => {
      const { es, client, addr } = await setup();
      expect((await h.drive(client.call(addr, ECHO, { text: 'one' }, { timeoutMs: 5000 }))).text).toBe('one');
      // A call in flight when the server goes away fails (not retryable: it may have run).
      const inflight = client.call(addr, HANG, { text: 'lost' }, { timeoutMs: 30_000 });
      inflight.catch(() => undefined);
      await h.until(() => es.notes.some((n) => n.text === 'lost'), 'hanging call reached the server');
      await es.server.stop();
      const lost = await expectCode(h.drive(inflight), ErrorCode.NETWORK_ERROR);
      expect(lost.retryable).toBe(false);
      // While down: fast failure, never a hang until the deadline.
      const down = await expectCode(h.drive(client.call(addr, ECHO, { text: 'down' }, { timeoutMs: 30_000 })), ErrorCode.NETWORK_ERROR);
      expect(down.retryable).toBe(true);
      const port = Number(addr.slice(addr.lastIndexOf(':') + 1));
      const again = await startEchoServer(h.transport(0), h.bindHost(0), port);
      closers.push(() => again.server.stop());
      expect(again.server.address).toBe(addr);
      // Reconnect: retry only on retryable errors (back-off after the failed connect), bounded.
      let result: EchoPB | undefined;
      for (let attempt = 0; attempt < 50 && !result; attempt++) {
        try {
          result = await h.drive(client.call(addr, ECHO, { text: 'two' }, { timeoutMs: 5000 }));
        } catch (e) {
          if (!isDbError(e) || !e.retryable) throw e;
          await h.pause(30);
        }
      }
      expect(result?.text).toBe('two');
    });
  });
}
