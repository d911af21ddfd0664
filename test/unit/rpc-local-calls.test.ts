/**
 * Calls inside one process (rpc/local-calls.ts): a client's calls to its own server's address are
 * dispatched by that server without a frame or a socket, with the answers, errors, limits and /rpcz
 * rows a call over the WebSocket gets; calls to other addresses still go over the network.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common';
import { LocalCallsClient } from '../../rpc/local-calls';
import type { RpcClient, RpcServer } from '../../rpc/types';
import { WsTransport } from '../../rpc/ws-transport';
import type { WsRpcServer } from '../../rpc/ws-server';
import { ECHO, FAIL, HANG, MISSING, NOTE, startEchoServer, type EchoServer } from './rpc-transport-compliance';

const MESSAGE_BYTES_MAX = 1024 * 1024;

async function failure(p: Promise<unknown>): Promise<DbError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DbError) return e;
    throw e;
  }
  throw new Error('the call succeeded');
}

describe('rpc local calls: a server called from its own process', () => {
  let local: EchoServer;
  let other: EchoServer;
  let inner: RpcClient;
  let enabled: boolean;
  let client: LocalCallsClient;
  const wsServer = (s: RpcServer): WsRpcServer => s as WsRpcServer;

  beforeEach(async () => {
    local = await startEchoServer(new WsTransport(), '127.0.0.1');
    other = await startEchoServer(new WsTransport(), '127.0.0.1');
    inner = new WsTransport().createClient({ caller: 'test' });
    enabled = true;
    client = new LocalCallsClient(inner, local.server.address, { dispatchLocal: (s, m, p, t) => local.server.dispatchLocal!(s, m, p, t) }, MESSAGE_BYTES_MAX, () => 5_000, () => enabled);
  });
  afterEach(async () => {
    local.release();
    other.release();
    await client.close();
    await local.server.stop();
    await other.server.stop();
  });

  it('rpc local calls: answers come from the handler without a connection; the request is a decoded copy', async () => {
    const req = { text: 'hello', n: 7n, data: Uint8Array.from([1, 2, 3]) };
    const r = await client.call(local.server.address, ECHO, req);
    expect(r.text).toBe('hello');
    expect(r.n).toBe(7n);
    expect([...(r.data ?? [])]).toEqual([1, 2, 3]);
    // Encoded and decoded: the answer is not the caller's own object.
    expect(r).not.toBe(req);
    expect(wsServer(local.server).connectionCount).toBe(0);
    expect(inner.connectionStats?.().open).toBe(0);
  });

  it('rpc local calls: calls to other addresses, and every call while disabled, go over the network', async () => {
    expect((await client.call(other.server.address, ECHO, { text: 'far' })).text).toBe('far');
    expect(wsServer(other.server).connectionCount).toBe(1);
    enabled = false;
    expect((await client.call(local.server.address, ECHO, { text: 'near' })).text).toBe('near');
    expect(wsServer(local.server).connectionCount).toBe(1);
  });

  it('rpc local calls: handler errors keep their code and details; unknown methods and exceptions as over the wire', async () => {
    const e = await failure(client.call(local.server.address, FAIL, {}));
    expect(e.code).toBe(ErrorCode.NOT_THE_LEADER);
    expect(e.details['leaderHint']).toBe('ts-2');
    expect((await failure(client.call(local.server.address, FAIL, { text: 'plain' }))).code).toBe(ErrorCode.INTERNAL);
    expect((await failure(client.call(local.server.address, MISSING, {}))).code).toBe(ErrorCode.UNKNOWN_METHOD);
  });

  it('rpc local calls: the caller\'s timeout fails the call TIMED_OUT; the handler sees the server deadline; /rpcz lists it meanwhile', async () => {
    const before = performance.now();
    const p = client.call(local.server.address, HANG, { text: 'x' }, { timeoutMs: 50, serverTimeoutMs: 60_000 });
    expect(client.rpcz()[0]!.callsInFlight).toBe(1);
    expect(wsServer(local.server).rpcz()[0]).toMatchObject({ remote: 'in-process', callsInFlight: 1 });
    const e = await failure(p);
    expect(e.code).toBe(ErrorCode.TIMED_OUT);
    expect(e.details['sent']).toBe(true);
    // The server is this process and alive: a slow call, not a lost leader (client/status-tablet-proxy.ts).
    expect(e.details['heard']).toBe(true);
    // The server was told the longer deadline (a resent retryable request joins the running original).
    expect(Number(local.notes[0]!.n)).toBeGreaterThan(before + 30_000);
    expect(client.rpcz()[0]!.callsInFlight).toBe(0);
  });

  it('rpc local calls: a stopping server answers SHUTTING_DOWN; an oversized request fails before dispatch', async () => {
    const big = await failure(client.call(local.server.address, ECHO, { data: new Uint8Array(MESSAGE_BYTES_MAX + 1) }));
    expect(big.code).toBe(ErrorCode.MESSAGE_TOO_LARGE);
    local.release();
    await local.server.stop();
    expect((await failure(client.call(local.server.address, ECHO, { text: 'late' }))).code).toBe(ErrorCode.SHUTTING_DOWN);
  });

  it('rpc local calls: one-way messages go over the network (Raft batches are not called in-process)', async () => {
    client.send(local.server.address, NOTE, { text: 'note' });
    const end = performance.now() + 5_000;
    while (local.notes.length === 0 && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(local.notes.map((n) => n.text)).toEqual(['note']);
  });
});
