/**
 * The cluster secret on RPC connections (rpc/rpc-auth.ts, docs/security.md), on in-process servers:
 * a client with the secret is served, one without it or with another gets UNAUTHENTICATED and its
 * connection is closed, a raw peer that never answers the challenge is closed, both lines of a
 * rotation file are accepted, the secret never crosses the wire, and a non-loopback bind needs one.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DbError, ErrorCode, Flags } from '../../common';
import { parseSecrets } from '../../rpc/cluster-secret';
import { RPC_HANDSHAKE_TIMEOUT_MS } from '../../rpc/listener-limits';
import { authMessage, AUTH_NONCE_HEADER, CLOSE_UNAUTHENTICATED, newNonce, parseAuthMessage, verifyAuth } from '../../rpc/rpc-auth';
import type { WsRpcServer } from '../../rpc/ws-server';
import { WsTransport } from '../../rpc/ws-transport';
import type { RpcClient } from '../../rpc/types';
import { ECHO, startEchoServer, type EchoServer } from './rpc-transport-compliance';

const NEW = 'new-secret-0123456789abcdef';
const OLD = 'old-secret-0123456789abcdef';

const servers: EchoServer[] = [];
const clients: RpcClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of servers.splice(0)) await s.server.stop();
});

async function securedServer(secretText = `${NEW}\n${OLD}\n`): Promise<EchoServer> {
  const flags = new Flags();
  flags.setFromString(RPC_HANDSHAKE_TIMEOUT_MS.name, '300');
  const es = await startEchoServer(new WsTransport({ flags, clusterSecrets: parseSecrets(secretText, 'test') }), '127.0.0.1');
  servers.push(es);
  return es;
}

function client(secretText?: string): RpcClient {
  const c = new WsTransport({ clusterSecrets: secretText === undefined ? [] : parseSecrets(secretText, 'test') }).createClient({ caller: 'test client' });
  clients.push(c);
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return e instanceof DbError ? e.code : `not a DbError: ${String(e)}`;
  }
}

describe('cluster secret', () => {
  it('secret: the answer proves the secret for this nonce and identity only; garbage answers parse to nothing (property)', () => {
    const [s] = parseSecrets(NEW, 'test');
    const nonce = newNonce();
    const a = parseAuthMessage(authMessage(s!, nonce, 'tserver 127.0.0.1:9100'))!;
    expect(verifyAuth([s!], nonce, a)).toBe(true);
    expect(verifyAuth(parseSecrets(OLD, 'test'), nonce, a)).toBe(false);
    expect(verifyAuth([s!], newNonce(), a)).toBe(false);
    expect(verifyAuth([s!], nonce, { ...a, identity: 'someone else' })).toBe(false);
    expect(authMessage(s!, nonce, 'x')).not.toContain(NEW);
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (t) => { const p = parseAuthMessage(t); expect(p === undefined || verifyAuth([s!], nonce, p) === false).toBe(true); }));
  });

  it('secret: a secret file needs one or two lines of at least 16 printable characters', () => {
    expect(parseSecrets(`# comment\n${NEW}\n\n`, 'f')).toHaveLength(1);
    for (const bad of ['', 'short', `${NEW}\n${OLD}\n${NEW}`, 'has a space in it 0123456789']) expect(() => parseSecrets(bad, 'f')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });

  it('secret: a client with the secret (either rotation line) is served; without it or with another one every call fails UNAUTHENTICATED, and the server keeps serving', async () => {
    const es = await securedServer();
    expect((await client(NEW).call(es.server.address, ECHO, { text: 'a' }, { timeoutMs: 5_000 })).text).toBe('a');
    expect((await client(OLD).call(es.server.address, ECHO, { text: 'b' }, { timeoutMs: 5_000 })).text).toBe('b');
    const none = client();
    expect(await codeOf(none.call(es.server.address, ECHO, { text: 'c' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.UNAUTHENTICATED);
    // During the back-off after a refusal too, not NETWORK_ERROR.
    expect(await codeOf(none.call(es.server.address, ECHO, { text: 'c' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.UNAUTHENTICATED);
    const wrong = client('wrong-secret-0123456789abcdef');
    expect(await codeOf(wrong.call(es.server.address, ECHO, { text: 'd' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.UNAUTHENTICATED);
    expect((es.server as WsRpcServer).unauthenticatedClosed).toBeGreaterThanOrEqual(1);
    // The authenticated identity is what /rpcz shows.
    expect((es.server as WsRpcServer).rpcz().some((c) => c.caller === 'test client')).toBe(true);
    expect((await client(NEW).call(es.server.address, ECHO, { text: 'e' }, { timeoutMs: 5_000 })).text).toBe('e');
  });

  it('secret: a raw peer calling without answering gets UNAUTHENTICATED and a 4401 close; one that stays silent is closed too', async () => {
    const es = await securedServer();
    const ws = new WebSocket(`ws://${es.server.address}/rpc`);
    let nonce: string | undefined;
    ws.on('upgrade', (res) => (nonce = String(res.headers[AUTH_NONCE_HEADER])));
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve) => ws.once('open', () => resolve()));
    expect(nonce).toMatch(/^[0-9a-f]{64}$/);
    const silent = new WebSocket(`ws://${es.server.address}/rpc`);
    const silentClosed = new Promise<number>((resolve) => silent.on('close', (code) => resolve(code)));
    // A call frame straight away, as a client without the secret would send.
    ws.send(Buffer.from([1, 2, 3, 4]), { binary: true });
    expect(await closed).toBe(CLOSE_UNAUTHENTICATED);
    expect(await silentClosed).toBe(CLOSE_UNAUTHENTICATED);
  });

  it('secret: no server listens beyond loopback without a secret (INVALID_ARGUMENT), with one it does', async () => {
    const plain = new WsTransport().createServer({ host: '0.0.0.0', port: 0 });
    await expect(plain.start()).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    const secured = new WsTransport({ clusterSecrets: parseSecrets(NEW, 'test') }).createServer({ host: '0.0.0.0', port: 0 });
    await secured.start();
    await secured.stop();
  });

  it('secret: random bytes as the first message never authenticate nor take the server down (fuzz)', async () => {
    const es = await securedServer();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 512 }), fc.boolean(), async (bytes, binary) => {
        const ws = new WebSocket(`ws://${es.server.address}/rpc`);
        ws.on('error', () => undefined);
        const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
        await new Promise<void>((resolve) => ws.once('open', () => resolve()));
        ws.send(binary ? Buffer.from(bytes) : Buffer.from(bytes).toString('latin1'), { binary });
        expect([CLOSE_UNAUTHENTICATED, 1007, 1006]).toContain(await closed);
      }),
      { numRuns: 25 },
    );
    expect((await client(NEW).call(es.server.address, ECHO, { text: 'alive' }, { timeoutMs: 5_000 })).text).toBe('alive');
  });
});
