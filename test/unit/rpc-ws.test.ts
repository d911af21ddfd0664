import { spawn } from 'node:child_process';
import * as http from 'node:http';
import * as net from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WebSocket, WebSocketServer } from 'ws';
import { createLogger, ErrorCode, Flags, SeededRng } from '../../common';
import { decodeFrame, encodeFrame, FrameKind } from '../../rpc/frame-codec';
import { protoCodec } from '../../rpc/proto';
import type { RpcClient } from '../../rpc/types';
import { sendCoalesced } from '../../rpc/send-coalescer';
import { FRAME_OVERHEAD_BYTES_MAX } from '../../rpc/ws-server';
import { WsTransport } from '../../rpc/ws-transport';
import { ECHO, NOTE, runTransportCompliance, startEchoServer, type EchoServer, type TransportHarness } from './rpc-transport-compliance';

const UNTIL_MS_MAX = 10_000;

export function wsHarness(): TransportHarness {
  return {
    transport: (_node, opts) => new WsTransport({ messageBytesMax: opts?.messageBytesMax }),
    bindHost: () => '127.0.0.1',
    drive: (p) => p,
    until: async (cond, what) => {
      const end = performance.now() + UNTIL_MS_MAX;
      while (!cond()) {
        if (performance.now() > end) throw new Error(`${what} did not happen within ${UNTIL_MS_MAX} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    pause: (ms) => new Promise((r) => setTimeout(r, ms)),
    nowMs: () => performance.now(),
    cleanup: async () => undefined,
  };
}

runTransportCompliance('ws', wsHarness);

describe('ws: bad input never takes the server down', () => {
  let es: EchoServer;
  let client: RpcClient;
  const sockets: WebSocket[] = [];
  const logLines: string[] = [];
  beforeEach(async () => {
    logLines.length = 0;
    const log = createLogger({ name: 'ws-test', stream: new Writable({ write: (c: Buffer, _e, cb) => (logLines.push(c.toString()), cb()) }) });
    es = await startEchoServer(new WsTransport({ messageBytesMax: 64 * 1024, log }), '127.0.0.1');
    client = new WsTransport().createClient();
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.terminate();
    await client.close();
    await es.server.stop();
  });

  async function rawSocket(): Promise<{ ws: WebSocket; frames: Uint8Array[]; closed: Promise<number> }> {
    const ws = new WebSocket(`ws://${es.server.address}/rpc`);
    sockets.push(ws);
    const frames: Uint8Array[] = [];
    ws.on('message', (d: Buffer) => frames.push(new Uint8Array(d)));
    ws.on('error', () => undefined);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return { ws, frames, closed };
  }

  async function stillServes(): Promise<void> {
    const r = await client.call(es.server.address, ECHO, { text: 'alive' }, { timeoutMs: 5000 });
    expect(r.text).toBe('alive');
  }

  async function waitFor(cond: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(cond()).toBe(true);
  }

  it('ws: garbage binary frame without a call id closes only that connection', async () => {
    const s = await rawSocket();
    s.ws.send(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    expect(await s.closed).toBe(1007);
    await stillServes();
  });

  it('ws: truncated frame with a readable call id gets a MALFORMED_FRAME answer', async () => {
    const s = await rawSocket();
    const good = encodeFrame({ callId: 77, kind: FrameKind.REQUEST, service: 'EchoService', method: 'Echo', payload: new Uint8Array(50), timeoutMs: 1000 });
    s.ws.send(good.subarray(0, good.length - 10));
    await waitFor(() => s.frames.length === 1);
    const r = decodeFrame(s.frames[0]!);
    expect(r.ok && r.frame.kind === FrameKind.ERROR && r.frame.callId === 77 && r.frame.error?.code).toBe(ErrorCode.MALFORMED_FRAME);
    await stillServes();
  });

  it('ws: request payload that is not the request type gets MALFORMED_FRAME; unknown service gets UNKNOWN_METHOD', async () => {
    const s = await rawSocket();
    s.ws.send(encodeFrame({ callId: 1, kind: FrameKind.REQUEST, service: 'EchoService', method: 'Echo', payload: Uint8Array.from([0x0a, 0x7f]), timeoutMs: 0 }));
    s.ws.send(encodeFrame({ callId: 2, kind: FrameKind.REQUEST, service: 'Nope', method: 'Echo', payload: new Uint8Array(0), timeoutMs: 0 }));
    await waitFor(() => s.frames.length === 2);
    const codes = s.frames.map((f) => {
      const r = decodeFrame(f);
      return r.ok ? `${r.frame.callId}:${r.frame.error?.code ?? ''}` : 'bad';
    });
    expect(codes.sort()).toEqual([`1:${ErrorCode.MALFORMED_FRAME}`, `2:${ErrorCode.UNKNOWN_METHOD}`]);
    await stillServes();
  });

  it('ws: a frame over the size limit closes that connection (1009) and others keep working', async () => {
    const s = await rawSocket();
    s.ws.send(Buffer.alloc(64 * 1024 + FRAME_OVERHEAD_BYTES_MAX + 1));
    expect(await s.closed).toBe(1009);
    await stillServes();
  });

  it('ws: a text frame closes that connection (1003), once: frames already sent behind it are dropped unread', async () => {
    const s = await rawSocket();
    s.ws.send('hello, I am text');
    s.ws.send('and more text');
    s.ws.send(encodeFrame({ callId: 9, kind: FrameKind.REQUEST, service: ECHO.service, method: ECHO.method, payload: ECHO.req.encode({ text: 'late' }), timeoutMs: 0 }));
    expect(await s.closed).toBe(1003);
    await stillServes();
    expect(logLines.filter((l) => l.includes('closing RPC connection'))).toHaveLength(1);
    expect(s.frames).toEqual([]);
  });

  it('ws: response/error frames sent by a client close that connection', async () => {
    const s = await rawSocket();
    s.ws.send(encodeFrame({ callId: 5, kind: FrameKind.RESPONSE, service: '', method: '', payload: new Uint8Array(0), timeoutMs: 0 }));
    expect(await s.closed).toBe(1008);
    await stillServes();
  });

  it('ws: raw TCP garbage and plain HTTP on the RPC port do not crash the server', async () => {
    await new Promise<void>((resolve) => {
      const port = Number(es.server.address.split(':')[1]);
      const sock = net.connect(port, '127.0.0.1', () => sock.end(Buffer.from('\x00\x01garbage\r\n\r\n\xff\xfe')));
      sock.on('error', () => resolve());
      sock.on('close', () => resolve());
      sock.resume();
    });
    const status = await new Promise<number>((resolve, reject) => {
      http.get(`http://${es.server.address}/`, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    expect(status).toBe(426);
    await stillServes();
  });
});

describe('ws: frame codec', () => {
  it('ws: hand-written frame codec is wire-compatible with rpc.proto Frame both ways', () => {
    const pb = protoCodec<Record<string, unknown>>('tessera.Frame');
    const f = {
      callId: 0xfffffffe,
      kind: FrameKind.ERROR,
      service: 'S',
      method: 'M',
      payload: Uint8Array.from([1, 2, 3]),
      error: { code: 'NOT_THE_LEADER', message: 'm', details: { leaderHint: 'x' } },
      timeoutMs: 1234,
    };
    const viaPb = pb.decode(encodeFrame(f));
    expect(viaPb['callId']).toBe(0xfffffffe);
    expect(viaPb['kind']).toBe('ERROR');
    expect(viaPb['error']).toEqual({ code: 'NOT_THE_LEADER', message: 'm', detailsJson: '{"leaderHint":"x"}' });
    expect(viaPb['timeoutMs']).toBe(1234);
    const back = decodeFrame(pb.encode({ ...viaPb }));
    expect(back.ok && back.frame).toEqual({ ...f, payload: expect.anything() });
    expect(back.ok && [...back.frame.payload]).toEqual([1, 2, 3]);
  });

  it('ws: encodeFrame writes the same bytes as protobufjs from the schema, and decodeFrame reads them back (random frames)', () => {
    const pb = protoCodec<Record<string, unknown>>('tessera.Frame');
    const kinds = [FrameKind.REQUEST, FrameKind.RESPONSE, FrameKind.ONEWAY, FrameKind.ERROR];
    fc.assert(
      fc.property(
        fc.record({
          callId: fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff })),
          kind: fc.constantFrom(...kinds),
          service: fc.string({ unit: 'grapheme', maxLength: 20 }),
          method: fc.string({ maxLength: 300 }),
          payload: fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.nat({ max: 70_000 }).map((n) => new Uint8Array(n).fill(n & 0xff))),
          error: fc.option(fc.record({ code: fc.string({ maxLength: 20 }), message: fc.string({ unit: 'grapheme', maxLength: 200 }), details: fc.dictionary(fc.string({ maxLength: 5 }), fc.integer()) }), { nil: undefined }),
          timeoutMs: fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff })),
        }),
        (f) => {
          const frame = f.error === undefined ? { ...f, error: undefined } : f;
          const mine = encodeFrame(frame as Parameters<typeof encodeFrame>[0]);
          const errorPb = f.error && { ...(f.error.code ? { code: f.error.code } : {}), ...(f.error.message ? { message: f.error.message } : {}), ...(Object.keys(f.error.details).length > 0 ? { detailsJson: JSON.stringify(f.error.details) } : {}) };
          const theirs = pb.encode({ callId: f.callId, kind: f.kind, service: f.service, method: f.method, payload: f.payload, ...(errorPb ? { error: errorPb } : {}), timeoutMs: f.timeoutMs });
          expect(Buffer.from(mine).equals(Buffer.from(theirs))).toBe(true);
          const back = decodeFrame(mine);
          expect(back.ok).toBe(true);
          if (!back.ok) return;
          expect(back.frame.callId).toBe(f.callId);
          expect(back.frame.service).toBe(f.service);
          expect(back.frame.method).toBe(f.method);
          expect(Buffer.from(back.frame.payload).equals(Buffer.from(f.payload))).toBe(true);
          expect(back.frame.timeoutMs).toBe(f.timeoutMs);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('ws: decodeFrame never throws on random bytes', () => {
    const rng = new SeededRng(5);
    for (let i = 0; i < 2000; i++) {
      const b = new Uint8Array(rng.int(40));
      for (let j = 0; j < b.length; j++) b[j] = rng.int(256);
      const r = decodeFrame(b);
      expect(typeof r.ok).toBe('boolean');
    }
  });
});

describe('ws: client frames', () => {
  it('ws: a client frame is masked with a zero key, so its payload crosses the wire as encoded (no per-byte XOR on either side)', async () => {
    const server = http.createServer();
    const wss = new WebSocketServer({ server, perMessageDeflate: false });
    const raw: Buffer[] = [];
    const delivered: Buffer[] = [];
    wss.on('connection', (ws, req) => {
      req.socket.on('data', (d: Buffer) => raw.push(d));
      ws.on('message', (d: Buffer) => delivered.push(d));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new WsTransport({}).createClient();
    try {
      const addr = server.address() as net.AddressInfo;
      client.send(`127.0.0.1:${addr.port}`, NOTE, { text: 'x'.repeat(300) });
      const end = performance.now() + UNTIL_MS_MAX;
      while (delivered.length === 0 && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
      expect(delivered.length).toBe(1);
      const b = Buffer.concat(raw);
      expect(b[1]! & 0x80).toBe(0x80); // the MASK bit RFC 6455 requires of a client is set
      const len7 = b[1]! & 0x7f;
      const keyAt = len7 === 126 ? 4 : len7 === 127 ? 10 : 2;
      expect([...b.subarray(keyAt, keyAt + 4)]).toEqual([0, 0, 0, 0]);
      // With a zero key the bytes on the wire are the frame itself.
      const payload = b.subarray(keyAt + 4, keyAt + 4 + delivered[0]!.length);
      expect(payload.equals(delivered[0]!)).toBe(true);
      const f = decodeFrame(payload);
      expect(f.ok && f.frame.kind).toBe(FrameKind.ONEWAY);
    } finally {
      await client.close();
      wss.close();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('ws: sends of one callback share socket writes', () => {
  it('ws: a lone frame is written at once; a burst in one callback is written in one more writev, in order', async () => {
    const server = http.createServer();
    const wss = new WebSocketServer({ server, perMessageDeflate: false });
    const delivered: string[] = [];
    wss.on('connection', (ws) => ws.on('message', (d: Buffer) => delivered.push(d.toString())));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address() as net.AddressInfo;
    const ws = new WebSocket(`ws://127.0.0.1:${addr.port}`);
    try {
      await new Promise<void>((r, j) => {
        ws.once('open', () => r());
        ws.once('error', j);
      });
      const socket = (ws as unknown as { _socket: net.Socket })._socket;
      let writes = 0;
      const w1 = socket._write.bind(socket);
      const wv = socket._writev!.bind(socket);
      socket._write = (...a: Parameters<typeof w1>) => {
        writes++;
        w1(...a);
      };
      socket._writev = (...a: Parameters<typeof wv>) => {
        writes++;
        wv(...a);
      };
      sendCoalesced(ws, Buffer.from('m0'));
      expect(writes).toBe(1); // nothing held back for a single frame
      for (let i = 1; i < 20; i++) sendCoalesced(ws, Buffer.from(`m${i}`));
      expect(socket.writableCorked).toBe(1); // the burst is held until the queued microtasks ran
      expect(writes).toBe(1);
      await Promise.resolve();
      expect(socket.writableCorked).toBe(0);
      expect(writes).toBe(2);
      await new Promise((r) => setImmediate(r));
      sendCoalesced(ws, Buffer.from('m20'));
      expect(writes).toBe(3);
      expect(socket.writableCorked).toBe(0);
      const end = performance.now() + UNTIL_MS_MAX;
      while (delivered.length < 21 && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
      expect(delivered).toEqual(Array.from({ length: 21 }, (_, i) => `m${i}`));
    } finally {
      ws.terminate();
      wss.close();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('ws: client keepalive', () => {
  /** pong: 'auto' (the ws layer answers at once), 'none', or a delay in ms before each answer. */
  async function rawServer(pong: 'auto' | 'none' | number): Promise<{ address: string; connections: () => number; pings: () => number; notes: () => number; stop: () => Promise<void> }> {
    const server = http.createServer();
    const wss = new WebSocketServer({ server, perMessageDeflate: false, autoPong: pong === 'auto' });
    let connections = 0;
    let pings = 0;
    let notes = 0;
    wss.on('connection', (ws) => {
      connections++;
      ws.on('ping', () => {
        pings++;
        if (typeof pong === 'number') setTimeout(() => ws.readyState === WebSocket.OPEN && ws.pong(), pong).unref();
      });
      ws.on('message', () => notes++);
      ws.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address() as net.AddressInfo;
    return {
      address: `127.0.0.1:${addr.port}`,
      connections: () => connections,
      pings: () => pings,
      notes: () => notes,
      stop: async () => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        await new Promise((r) => server.close(r));
      },
    };
  }
  const flags = (interval: number, timeout: number): Flags => {
    const f = new Flags();
    f.setFromString('rpc_keepalive_interval_ms', String(interval));
    f.setFromString('rpc_connection_timeout_ms', String(timeout));
    return f;
  };

  it('ws: a connection whose server answers nothing (no frame, no pong) is closed after rpc_connection_timeout_ms, failing its calls with NETWORK_ERROR long before their deadline; without keepalive the call hangs on', async () => {
    const s = await rawServer('none');
    const client = new WsTransport({ flags: flags(100, 1_000) }).createClient();
    const quiet = new WsTransport({ flags: flags(0, 1_000) }).createClient();
    try {
      const t0 = performance.now();
      const err = (await client.call(s.address, ECHO, { text: 'x' }, { timeoutMs: 30_000 }).catch((e: unknown) => e)) as { code?: string; message?: string };
      const took = performance.now() - t0;
      expect(err.code).toBe(ErrorCode.NETWORK_ERROR);
      expect(err.message).toContain('stayed unanswered');
      expect(s.pings()).toBeGreaterThan(0);
      expect(client.connectionStats()).toEqual({ open: 0, closedUnansweredPing: 1, connectTimedOut: 0 });
      // Keepalive off: after the same time the call is still waiting.
      let settled = false;
      const p = quiet.call(s.address, ECHO, { text: 'x' }, { timeoutMs: 30_000 }).then(
        () => (settled = true),
        () => (settled = true),
      );
      await new Promise((r) => setTimeout(r, Math.max(1_500, took + 500))); // the scenario: the same time passes, and the call must still wait
      expect(settled).toBe(false);
      await quiet.close();
      await p;
    } finally {
      await client.close();
      await quiet.close();
      await s.stop();
    }
  });

  /**
   * A note, `quietMs` of nothing from the client, another note: both arrive on one connection (the
   * server answered pings as `pong` says), with at least `pingsMin` pings seen. Returns the client's stats.
   */
  async function quietThenNote(pong: 'auto' | number, intervalMs: number, timeoutMs: number, quietMs: number, pingsMin: number): Promise<unknown> {
    const s = await rawServer(pong);
    const client = new WsTransport({ flags: flags(intervalMs, timeoutMs) }).createClient();
    try {
      client.send(s.address, NOTE, { text: 'a' });
      const end = performance.now() + UNTIL_MS_MAX;
      while (s.notes() < 1 && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, quietMs)); // the scenario: the connection stays quiet this long
      client.send(s.address, NOTE, { text: 'b' });
      while (s.notes() < 2 && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
      expect(s.notes()).toBe(2);
      expect(s.connections()).toBe(1);
      expect(s.pings()).toBeGreaterThanOrEqual(pingsMin);
      return client.connectionStats();
    } finally {
      await client.close();
      await s.stop();
    }
  }

  it('ws: a server that answers each ping only after 60 % of rpc_connection_timeout_ms (held up, not gone) keeps its one connection', async () => {
    expect(await quietThenNote(1_200, 200, 2_000, 4_500, 3)).toEqual({ open: 1, closedUnansweredPing: 0, connectTimedOut: 0 });
  });

  it('ws: a quiet connection to a live server stays open: pings are answered and nothing reconnects', async () => {
    expect(await quietThenNote('auto', 100, 1_000, 2_500, 5)).toEqual({ open: 1, closedUnansweredPing: 0, connectTimedOut: 0 });
  });
});

describe('ws: client TCP connect time-out', () => {
  /**
   * A port whose SYNs go unanswered, as across a network cut: a listener (python3, which never
   * accepts) with a backlog of one, already taken by a connection of ours; Linux drops the SYNs of
   * any further connect to it.
   */
  async function synDropper(): Promise<{ address: string; stop: () => void }> {
    const py = spawn('python3', ['-c', 'import socket,time\ns=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(0); print(s.getsockname()[1], flush=True); time.sleep(120)'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise<number>((resolve, reject) => {
      py.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      py.once('error', reject);
    });
    const filler = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => filler.once('connect', resolve).once('error', reject));
    return {
      address: `127.0.0.1:${port}`,
      stop: () => {
        filler.destroy();
        py.kill('SIGKILL');
      },
    };
  }
  const flags = (tcpConnectTimeoutMs: number): Flags => {
    const f = new Flags();
    f.setFromString('rpc_connect_timeout_ms', '5000');
    f.setFromString('rpc_tcp_connect_timeout_ms', String(tcpConnectTimeoutMs));
    f.setFromString('rpc_reconnect_backoff_max_ms', '2000');
    return f;
  };

  it('ws: a connect whose SYN goes unanswered is given up after rpc_tcp_connect_timeout_ms (not the 5 s handshake time-out) and the next call tries again at once, without back-off; with the flag 0 the call waits on', async () => {
    const d = await synDropper();
    const client = new WsTransport({ flags: flags(300) }).createClient();
    const plain = new WsTransport({ flags: flags(0) }).createClient();
    try {
      const t0 = performance.now();
      const err = (await client.call(d.address, ECHO, { text: 'x' }, { timeoutMs: 30_000 }).catch((e: unknown) => e)) as { code?: string; message?: string; retryable?: boolean };
      const took = performance.now() - t0;
      expect(err.code).toBe(ErrorCode.NETWORK_ERROR);
      expect(err.message).toContain('TCP connect went unanswered for 300 ms');
      // (The message names the TCP connect's timer, not the handshake's 5 s rpc_connect_timeout_ms.)
      // No back-off after it: the next call is a new attempt (a back-off would fail it at once, "unreachable").
      const err2 = (await client.call(d.address, ECHO, { text: 'x' }, { timeoutMs: 30_000 }).catch((e: unknown) => e)) as { message?: string };
      expect(err2.message).toContain('TCP connect went unanswered');
      // A host name: resolved first (the timer runs from the SYN on), then the same.
      const err3 = (await client.call(d.address.replace('127.0.0.1', 'localhost'), ECHO, { text: 'x' }, { timeoutMs: 30_000 }).catch((e: unknown) => e)) as { message?: string };
      expect(err3.message).toContain('TCP connect went unanswered');
      expect(client.connectionStats()).toEqual({ open: 0, closedUnansweredPing: 0, connectTimedOut: 3 });
      // Without it the call is still connecting after longer than that (TCP retransmits the SYN).
      let settled = false;
      const p = plain.call(d.address, ECHO, { text: 'x' }, { timeoutMs: 30_000 }).then(
        () => (settled = true),
        () => (settled = true),
      );
      await new Promise((r) => setTimeout(r, Math.max(1_500, took + 500))); // the scenario: the same time passes, and the call must still wait
      expect(settled).toBe(false);
      expect(plain.connectionStats().connectTimedOut).toBe(0);
      await plain.close();
      await p;
    } finally {
      await client.close();
      await plain.close();
      d.stop();
    }
  });

  it('ws: the TCP connect time-out does not touch a server that is there: calls connect and are answered', async () => {
    const s = await startEchoServer(new WsTransport({}), '127.0.0.1');
    const client = new WsTransport({ flags: flags(100) }).createClient();
    try {
      for (let i = 0; i < 3; i++) expect(await client.call(s.server.address, ECHO, { text: `x${i}` }, { timeoutMs: 5_000 })).toMatchObject({ text: `x${i}` });
      expect(client.connectionStats()).toEqual({ open: 1, closedUnansweredPing: 0, connectTimedOut: 0 });
    } finally {
      await client.close();
      await s.server.stop();
    }
  });
});

describe('ws: server keepalive', () => {
  const flags = (interval: number, timeout: number): Flags => {
    const f = new Flags();
    f.setFromString('rpc_keepalive_interval_ms', String(interval));
    f.setFromString('rpc_connection_timeout_ms', String(timeout));
    return f;
  };
  async function rawClient(address: string, autoPong: boolean): Promise<{ ws: WebSocket; closed: Promise<void> }> {
    const ws = new WebSocket(`ws://${address}/rpc`, { autoPong });
    ws.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => ws.on('close', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return { ws, closed };
  }

  it('ws: the server closes a client connection whose ping stays unanswered past rpc_connection_timeout_ms, keeps one that answers, and goes on serving', async () => {
    const es = await startEchoServer(new WsTransport({ flags: flags(100, 1_000) }), '127.0.0.1');
    const server = es.server as unknown as { connectionCount: number; silentClosed: number };
    const dead = await rawClient(es.server.address, false);
    const live = await rawClient(es.server.address, true);
    try {
      let pingsSeen = 0;
      dead.ws.on('ping', () => pingsSeen++);
      const t0 = performance.now();
      const closedIn = await Promise.race([dead.closed.then(() => performance.now() - t0), new Promise<number>((r) => setTimeout(() => r(-1), UNTIL_MS_MAX))]);
      expect(closedIn, 'the silent client was never closed').toBeGreaterThan(0);
      expect(pingsSeen).toBeGreaterThan(0);
      expect(server.silentClosed).toBe(1);
      expect((es.server as unknown as { connectionStats(): unknown }).connectionStats()).toMatchObject({ open: 1, closedUnansweredPing: 1 });
      expect(live.ws.readyState).toBe(WebSocket.OPEN);
      await new Promise((r) => setTimeout(r, 1_500)); // the scenario: time passes, and the live client must stay connected
      expect(live.ws.readyState).toBe(WebSocket.OPEN);
      expect(server.connectionCount).toBe(1);
      const client = new WsTransport().createClient();
      try {
        expect((await client.call(es.server.address, ECHO, { text: 'still here' }, { timeoutMs: 5_000 })).text).toBe('still here');
      } finally {
        await client.close();
      }
    } finally {
      dead.ws.terminate();
      live.ws.terminate();
      await es.server.stop();
    }
  });
});
