/**
 * Hardened listeners (rpc/listener-limits.ts, rpc/frame-watch.ts, docs/security.md), in process: a
 * console answers a half-sent request or a lying Content-Length with 408 (or closes it), big headers
 * with 431, garbage with 400; an RPC port closes a half-sent upgrade, a truncated frame and connects
 * beyond rpc_connections_per_ip_max; random bytes on either port never take the server down. Short
 * timeouts keep the tests quick; they assert on what happens, never on how long it took.
 */
import * as net from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Flags } from '../../common';
import { FrameBoundaryTracker } from '../../rpc/frame-watch';
import { RPC_CONNECTIONS_PER_IP_MAX, RPC_FRAME_TIMEOUT_MS, RPC_HANDSHAKE_TIMEOUT_MS, WEBSERVER_CONNECTIONS_PER_IP_MAX, WEBSERVER_REQUEST_TIMEOUT_MS } from '../../rpc/listener-limits';
import { WebServer } from '../../rpc/web-server';
import type { WsRpcServer } from '../../rpc/ws-server';
import { WsTransport } from '../../rpc/ws-transport';
import { ECHO, startEchoServer, type EchoServer } from './rpc-transport-compliance';

const SHORT_MS = 300;

/**
 * Open a raw TCP connection, write `chunks`, and collect what comes back until the server closes
 * (closed: true) or, when `giveUpMs` is given, until this side gives up (closed: false; fuzzing, where
 * random bytes may happen to be a valid request the server rightly keeps the connection open after).
 */
function rawExchange(address: string, chunks: Array<string | Buffer>, giveUpMs?: number): Promise<{ reply: string; closed: boolean }> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    let byUs = false;
    const s = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) }, () => {
      for (const c of chunks) s.write(c);
    });
    const t = giveUpMs === undefined ? undefined : setTimeout(() => ((byUs = true), s.destroy()), giveUpMs);
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(t);
      resolve({ reply: Buffer.concat(got).toString('latin1'), closed: !byUs });
    });
  });
}

const statusOf = (reply: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0);

const webs: WebServer[] = [];
const echoes: EchoServer[] = [];
afterEach(async () => {
  for (const w of webs.splice(0)) await w.stop();
  for (const e of echoes.splice(0)) await e.server.stop();
});

async function shortConsole(more: Record<string, string> = {}): Promise<WebServer> {
  const flags = new Flags();
  flags.setFromString(WEBSERVER_REQUEST_TIMEOUT_MS.name, String(SHORT_MS));
  for (const [k, v] of Object.entries(more)) flags.setFromString(k, v);
  const w = new WebServer({ kind: 'tserver', host: '127.0.0.1', port: 0, flags });
  await w.start();
  webs.push(w);
  return w;
}

async function shortRpc(more: Record<string, string> = {}): Promise<EchoServer> {
  const flags = new Flags();
  flags.setFromString(RPC_HANDSHAKE_TIMEOUT_MS.name, String(SHORT_MS));
  flags.setFromString(RPC_FRAME_TIMEOUT_MS.name, String(SHORT_MS));
  for (const [k, v] of Object.entries(more)) flags.setFromString(k, v);
  const es = await startEchoServer(new WsTransport({ flags }), '127.0.0.1');
  echoes.push(es);
  return es;
}

async function consoleAnswers(w: WebServer): Promise<void> {
  const r = await rawExchange(w.address, [`GET /api/v1/healthz HTTP/1.1\r\nHost: ${w.address}\r\nConnection: close\r\n\r\n`]);
  expect(statusOf(r.reply)).toBe(200);
}

async function rpcAnswers(es: EchoServer): Promise<void> {
  const client = new WsTransport().createClient();
  try {
    expect((await client.call(es.server.address, ECHO, { text: 'alive' }, { timeoutMs: 5_000 })).text).toBe('alive');
  } finally {
    await client.close();
  }
}

describe('frame boundaries', () => {
  it('frame-watch: whole frames fed in any split end between frames; a cut inside one is mid-frame (property)', () => {
    const frame = fc.record({ len: fc.oneof(fc.integer({ min: 0, max: 125 }), fc.integer({ min: 126, max: 70_000 })), masked: fc.boolean() }).map(({ len, masked }) => {
      const ext = len < 126 ? [] : len < 65_536 ? [len >> 8, len & 0xff] : [0, 0, 0, 0, 0, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff];
      const len7 = len < 126 ? len : len < 65_536 ? 126 : 127;
      return Buffer.concat([Buffer.from([0x82, (masked ? 0x80 : 0) | len7, ...ext, ...(masked ? [1, 2, 3, 4] : [])]), Buffer.alloc(len, 7)]);
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), fc.nat(), (frames, cuts, cutAt) => {
        const all = Buffer.concat(frames);
        const t = new FrameBoundaryTracker();
        const points = [...new Set(cuts.map((c) => c % all.length))].sort((a, b) => a - b);
        let at = 0;
        for (const p of [...points, all.length]) {
          t.feed(all.subarray(at, p));
          at = p;
        }
        expect(t.midFrame).toBe(false);
        // Cut strictly inside the last frame: mid-frame.
        const last = frames[frames.length - 1]!;
        const start = all.length - last.length;
        const inside = start + 1 + (cutAt % Math.max(1, last.length - 1));
        if (inside < all.length) {
          const u = new FrameBoundaryTracker();
          u.feed(all.subarray(0, inside));
          expect(u.midFrame).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('console limits', () => {
  it('console: a half-sent request, a lying Content-Length and a silent connection are answered 408 or closed; the console keeps serving', async () => {
    const w = await shortConsole();
    const halfHeaders = await rawExchange(w.address, [`POST /api/v1/flags HTTP/1.1\r\nHost: ${w.address}\r\nContent-Type: appl`]);
    expect(halfHeaders.closed).toBe(true);
    expect([0, 408]).toContain(statusOf(halfHeaders.reply));
    const lying = await rawExchange(w.address, [`POST /api/v1/flags HTTP/1.1\r\nHost: ${w.address}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":`]);
    expect(statusOf(lying.reply)).toBe(408);
    expect(lying.reply).toContain('"code":"TIMED_OUT"');
    const silent = await rawExchange(w.address, []);
    expect(silent.closed).toBe(true);
    await consoleAnswers(w);
  });

  it('console: headers over 16 KiB get 431, garbage gets 400, and the console keeps serving', async () => {
    const w = await shortConsole();
    const big = await rawExchange(w.address, [`GET / HTTP/1.1\r\nHost: ${w.address}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    expect(statusOf(big.reply)).toBe(431);
    const garbage = await rawExchange(w.address, ['\x16\x03\x01\x02\x00 not http at all\r\n\r\n']);
    expect(statusOf(garbage.reply)).toBe(400);
    await consoleAnswers(w);
  });

  it('console: connections beyond webserver_connections_per_ip_max get 503 and are closed; after one closes a new one is served', async () => {
    const w = await shortConsole({ [WEBSERVER_CONNECTIONS_PER_IP_MAX.name]: '2', [WEBSERVER_REQUEST_TIMEOUT_MS.name]: '60000' });
    const [host, port] = [w.address.slice(0, w.address.lastIndexOf(':')), Number(w.address.slice(w.address.lastIndexOf(':') + 1))];
    const hold = async (): Promise<net.Socket> => {
      const s = net.connect(port, host);
      await new Promise<void>((r, j) => s.once('connect', () => r()).once('error', j));
      return s;
    };
    const answerOf = (s: net.Socket): Promise<string> =>
      new Promise((resolve) => {
        let got = '';
        s.on('data', (b: Buffer) => (got += b.toString()));
        s.once('close', () => resolve(got));
      });
    const a = await hold();
    const b = await hold();
    const third = await hold();
    expect(await answerOf(third)).toMatch(/^HTTP\/1\.1 503 /);
    a.destroy();
    let served = false;
    for (let i = 0; i < 200 && !served; i++) {
      const r = await fetch(`http://${w.address}/api/v1/healthz`).catch(() => undefined);
      served = r?.status === 200;
      if (!served) await new Promise((res) => setTimeout(res, 10));
    }
    expect(served).toBe(true);
    b.destroy();
  });

  it('console: random bytes never take it down (fuzz)', async () => {
    const w = await shortConsole();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 2_000 }), async (bytes) => {
        const r = await rawExchange(w.address, [Buffer.from(bytes)], 2_000);
        // Whatever it was, an answer (if any) is a status line, never a hang-up mid-answer.
        if (r.reply !== '') expect(statusOf(r.reply)).toBeGreaterThanOrEqual(200);
      }),
      { numRuns: 30 },
    );
    await consoleAnswers(w);
  });
});

describe('RPC port limits', () => {
  it('rpc: a half-sent upgrade request gets 408 or is closed, a truncated frame closes its connection, and the server keeps serving', async () => {
    const es = await shortRpc();
    const half = await rawExchange(es.server.address, [`GET /rpc HTTP/1.1\r\nHost: ${es.server.address}\r\nUpgrade: websocket\r\n`]);
    expect(half.closed).toBe(true);
    expect([0, 408]).toContain(statusOf(half.reply));
    const ws = new WebSocket(`ws://${es.server.address}/rpc`);
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    // A binary frame header announcing 100 bytes, then 10 of them and nothing more.
    (ws as unknown as { _socket: net.Socket })._socket.write(Buffer.concat([Buffer.from([0x82, 0x80 | 100, 0, 0, 0, 0]), Buffer.alloc(10)]));
    expect(await closed).toBe(1006);
    await rpcAnswers(es);
  });

  it('rpc: connects beyond rpc_connections_per_ip_max get HTTP 503; after one closes a new one opens', async () => {
    const es = await shortRpc({ [RPC_CONNECTIONS_PER_IP_MAX.name]: '2' });
    const open = async (): Promise<WebSocket> => {
      const ws = new WebSocket(`ws://${es.server.address}/rpc`);
      return new Promise((resolve, reject) => {
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${String(res.statusCode)}`)));
        ws.once('error', reject);
      });
    };
    const a = await open();
    const b = await open();
    await expect(open()).rejects.toThrow('HTTP 503');
    a.terminate();
    let c: WebSocket | undefined;
    for (let i = 0; i < 200 && !c; i++) c = await open().catch(async () => (await new Promise((r) => setTimeout(r, 10)), undefined));
    expect(c).toBeDefined();
    b.terminate();
    c!.terminate();
  });

  it('rpc: random bytes before and after a handshake never take the server down (fuzz)', async () => {
    const es = await shortRpc();
    const upgrade = `GET /rpc HTTP/1.1\r\nHost: ${es.server.address}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.uint8Array({ minLength: 1, maxLength: 2_000 }), async (afterUpgrade, bytes) => {
        await rawExchange(es.server.address, afterUpgrade ? [upgrade, Buffer.from(bytes)] : [Buffer.from(bytes)], 2_000);
      }),
      { numRuns: 40 },
    );
    // Nothing fuzzed is left holding a connection, and the server still serves.
    const server = es.server as WsRpcServer;
    for (let i = 0; i < 500 && server.connectionCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server.connectionCount).toBe(0);
    await rpcAnswers(es);
  });
});
