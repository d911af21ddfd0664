/**
 * /rpcz: the WebSocket transport's view of its connections and the calls in flight on them, both
 * ways, and the console page that shows it (rpc/rpcz.ts).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, Flags } from '../../common';
import { Metrics } from '../../rpc/metrics';
import { RPCZ_CALLS_PER_CONNECTION_MAX, rpczOf, type Rpcz } from '../../rpc/rpcz';
import type { RpcClient } from '../../rpc/types';
import { WebServer } from '../../rpc/web-server';
import { callerOf } from '../../rpc/ws-server';
import { WsTransport } from '../../rpc/ws-transport';
import { ECHO, HANG, NOTE, startEchoServer, type EchoServer } from './rpc-transport-compliance';

const WAIT_MS_MAX = 10_000;

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = performance.now() + WAIT_MS_MAX;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`${what} did not happen within ${WAIT_MS_MAX} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function get(address: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const [host, port] = address.split(':');
    http
      .get({ host, port: Number(port), path }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      })
      .on('error', reject);
  });
}

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('rpcz: connections and calls in flight (WebSocket transport)', () => {
  let es: EchoServer;
  let client: RpcClient;
  beforeEach(async () => {
    es = await startEchoServer(new WsTransport(), '127.0.0.1');
    client = new WsTransport().createClient({ caller: 'tserver 127.0.0.9:9100' });
  });
  afterEach(async () => {
    es.release();
    await client.close();
    await es.server.stop();
  });

  it('rpcz: a call being handled shows on both ends with its method, age and timeout, the longest-running first; answered calls leave', async () => {
    expect(await client.call(es.server.address, ECHO, { text: 'one' })).toMatchObject({ text: 'one' });
    client.send(es.server.address, NOTE, { text: 'a one-way message is never in flight' });
    const first = client.call(es.server.address, HANG, { text: 'first' }, { timeoutMs: 9000 });
    await until(() => (es.server.rpcz?.()[0]?.callsInFlight ?? 0) === 1, 'the first hanging call reaching the server');
    await new Promise((r) => setTimeout(r, 30)); // the scenario: the first call grows older than the second
    const second = client.call(es.server.address, HANG, { text: 'second' }, { timeoutMs: 8000 });
    await until(() => (es.server.rpcz?.()[0]?.callsInFlight ?? 0) === 2, 'the second hanging call reaching the server');

    const [inbound, ...otherIn] = es.server.rpcz!();
    expect(otherIn).toEqual([]);
    expect(inbound).toMatchObject({ caller: 'tserver 127.0.0.9:9100', state: 'open', calls: 1, callsInFlight: 2 });
    expect(inbound!.remote).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(inbound!.openForMs).toBeGreaterThanOrEqual(inbound!.inFlight[0]!.elapsedMs);
    expect(inbound!.inFlight.map((c) => [c.service, c.method, c.timeoutMs])).toEqual([
      ['EchoService', 'Hang', 9000],
      ['EchoService', 'Hang', 8000],
    ]);
    expect(inbound!.inFlight[0]!.elapsedMs, 'the first call has waited longer').toBeGreaterThan(inbound!.inFlight[1]!.elapsedMs);
    expect(inbound!.inFlight[0]!.callId).toBeLessThan(inbound!.inFlight[1]!.callId);

    const [outbound, ...otherOut] = client.rpcz!();
    expect(otherOut).toEqual([]);
    expect(outbound).toMatchObject({ remote: es.server.address, state: 'open', calls: 3, callsInFlight: 2, outboundBytes: 0 });
    expect(outbound!.inFlight.map((c) => [c.method, c.timeoutMs, c.sent])).toEqual([
      ['Hang', 9000, true],
      ['Hang', 8000, true],
    ]);
    expect(outbound!.inFlight[0]!.elapsedMs).toBeGreaterThanOrEqual(30);
    expect(outbound!.retryInMs).toBeUndefined();

    // The same, summed for Prometheus: calls in flight each side and the oldest one's age.
    const metrics = new Metrics();
    metrics.rpcConnections(es.server, client);
    const prom = await metrics.prometheus();
    expect(prom).toContain('rpc_calls_in_flight{side="server"} 2');
    expect(prom).toContain('rpc_calls_in_flight{side="client"} 2');
    const oldest = /rpc_oldest_call_in_flight_seconds\{side="client"\} ([\d.]+)/.exec(prom);
    expect(Number(oldest?.[1]), 'the client has waited 30 ms or more for its first call').toBeGreaterThanOrEqual(0.03);

    es.release();
    await Promise.all([first, second]);
    await until(() => es.server.rpcz!()[0]!.callsInFlight === 0, 'the server answering both');
    const after = await metrics.prometheus();
    for (const side of ['server', 'client']) {
      expect(after).toContain(`rpc_calls_in_flight{side="${side}"} 0`);
      expect(after).toContain(`rpc_oldest_call_in_flight_seconds{side="${side}"} 0`);
    }
    expect(es.server.rpcz!()[0]).toMatchObject({ calls: 3, callsInFlight: 0, inFlight: [] });
    expect(client.rpcz!()[0]).toMatchObject({ calls: 3, callsInFlight: 0, inFlight: [] });
  });

  it(`rpcz: lists at most ${RPCZ_CALLS_PER_CONNECTION_MAX} calls per connection and counts them all`, async () => {
    const n = RPCZ_CALLS_PER_CONNECTION_MAX + 5;
    const calls = Array.from({ length: n }, (_, i) => client.call(es.server.address, HANG, { text: `c${i}` }, { timeoutMs: 9000 }));
    await until(() => (es.server.rpcz!()[0]?.callsInFlight ?? 0) === n, `${n} calls reaching the server`);
    const inbound = es.server.rpcz!()[0]!;
    expect(inbound.inFlight).toHaveLength(RPCZ_CALLS_PER_CONNECTION_MAX);
    const outbound = client.rpcz!()[0]!;
    expect(outbound.callsInFlight).toBe(n);
    expect(outbound.inFlight).toHaveLength(RPCZ_CALLS_PER_CONNECTION_MAX);
    // The oldest first: the first calls made have the lowest ids.
    expect(outbound.inFlight[0]!.callId).toBe(Math.min(...outbound.inFlight.map((c) => c.callId)));
    es.release();
    await Promise.all(calls);
  });

  it('rpcz: a server that refuses connections shows as backing off, with the failures and the time to the next try', async () => {
    const dead = `127.0.0.1:${await closedPort()}`;
    await expect(client.call(dead, ECHO, { text: 'x' }, { timeoutMs: 5000 })).rejects.toMatchObject({ code: ErrorCode.NETWORK_ERROR });
    const row = client.rpcz!().find((c) => c.remote === dead);
    expect(row).toMatchObject({ state: 'backing off', connectFailures: 1, callsInFlight: 0, calls: 1 });
    expect(row!.retryInMs).toBeGreaterThan(0);
    expect(row!.openForMs).toBeUndefined();
  });

  it('rpcz: the console page and its JSON twin show both sides; a console without it has no /rpcz', async () => {
    const hang = client.call(es.server.address, HANG, { text: 'seen' }, { timeoutMs: 9000 });
    await until(() => (es.server.rpcz!()[0]?.callsInFlight ?? 0) === 1, 'the call reaching the server');
    const web = new WebServer({ kind: 'tserver', port: 0, flags: new Flags(), rpcz: () => rpczOf(es.server, client) });
    const bare = new WebServer({ kind: 'tserver', port: 0, flags: new Flags() });
    await web.start();
    await bare.start();
    try {
      const z = JSON.parse((await get(web.address, '/api/v1/rpcz')).body) as Rpcz;
      expect(z.inbound).toHaveLength(1);
      expect(z.inbound[0]!.inFlight[0]).toMatchObject({ service: 'EchoService', method: 'Hang', timeoutMs: 9000 });
      expect(z.outbound[0]).toMatchObject({ remote: es.server.address, callsInFlight: 1 });
      const page = await get(web.address, '/rpcz');
      expect(page.status).toBe(200);
      expect(page.body).toContain('<table id="inbound-calls">');
      expect(page.body).toContain('<td>EchoService.Hang</td>');
      expect(page.body).toContain(`<td>${es.server.address}</td>`);
      expect(page.body).toContain('1 inbound and 1 outbound call(s) in flight');
      expect(page.body).toContain(`<td>tserver 127.0.0.9:9100 (${z.inbound[0]!.remote})</td>`);
      expect((await get(web.address, '/')).body).toContain('/rpcz');
      expect((await get(bare.address, '/rpcz')).status).toBe(404);
      expect((await get(bare.address, '/api/v1/rpcz')).status).toBe(404);
    } finally {
      await web.stop();
      await bare.stop();
    }
    es.release();
    await hang;
  });

  it('rpcz: a client that names no caller, or a name that is not short printable text, shows by its address only', async () => {
    const anon = new WsTransport().createClient();
    try {
      await anon.call(es.server.address, ECHO, { text: 'x' });
      const rows = es.server.rpcz!();
      expect(rows).toHaveLength(1);
      expect(rows[0]!.caller).toBeUndefined();
    } finally {
      await anon.close();
    }
    expect(callerOf('client pid 42')).toBe('client pid 42');
    expect(callerOf('bad\nname')).toBeUndefined();
    expect(callerOf('x'.repeat(201))).toBeUndefined();
    expect(callerOf(['a', 'b'])).toBeUndefined();
    expect(callerOf('')).toBeUndefined();
  });
});
