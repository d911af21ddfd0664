/**
 * Bad input never takes a process down: garbage bytes on the RPC and HTTP ports, unknown tables,
 * malformed rows and bad DDL all get clear error codes, and the servers keep serving afterwards.
 */
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { httpRequest, isHealthy } from '../../lab/console-http';
import { masterMethods, tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return e instanceof DbError ? e.code : `not a DbError: ${String(e)}`;
  }
}

function rawTcp(address: string, bytes: Buffer): Promise<void> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const s = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) }, () => {
      s.write(bytes);
      setTimeout(() => s.destroy(), 200);
    });
    s.on('error', () => resolve());
    s.on('close', () => resolve());
  });
}

function wsGarbage(address: string, frames: Array<Buffer | string>): Promise<void> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://${address}/rpc`);
    ws.on('open', () => {
      for (const f of frames) ws.send(f);
      setTimeout(() => ws.close(), 200);
    });
    ws.on('error', () => resolve());
    ws.on('close', () => resolve());
  });
}

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');

describe('cluster: bad input', () => {
  it('bad input: garbage, unknown tables, malformed rows and bad DDL get error codes and every process stays up', async () => {
    cluster = await ProcCluster.create({ hostBase: 204, masters: 1, tservers: 1, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    await cl.startAll();
    const master = cl.masters[0]!;
    const ts = cl.tservers[0]!;
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 10_000 });
    const c = client;

    // Garbage on the RPC ports (raw TCP and WebSocket frames that are not Frames) and the HTTP port.
    const junk = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) & 0xff));
    for (const addr of [master.rpcAddress, ts.rpcAddress]) {
      await rawTcp(addr, junk);
      await wsGarbage(addr, [junk, Buffer.from([0x08, 0x01, 0x10]), 'text frame', Buffer.alloc(0)]);
    }
    await rawTcp(master.webAddress, junk);
    await rawTcp(master.webAddress, Buffer.from('GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect((await httpRequest(`http://${master.webAddress}/api/v1/table?name=nope`)).status).toBe(404);
    expect((await httpRequest(`http://${master.webAddress}/api/v1/table`)).status).toBe(400);
    expect((await httpRequest(`http://${master.webAddress}/api/v1/flags`, { method: 'POST', body: '{not json' })).status).toBe(400);

    // Bad DDL.
    const good = { name: 'ok_table', columns: [{ name: 'id', type: 'int64' as const }, { name: 'v', type: 'string' as const }], primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 1 };
    expect(await codeOf(c.createTable(good))).toBe('OK');
    expect(await codeOf(c.createTable(good))).toBe('ALREADY_EXISTS');
    expect(await codeOf(c.createTable({ ...good, name: 't2', columns: [{ name: 'id', type: 'int32' as never }] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(c.createTable({ ...good, name: 't3', primaryKey: {} }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(c.createTable({ ...good, name: 'bad name!' }))).toBe('INVALID_ARGUMENT');
    const rf = c.createTable({ ...good, name: 't4', replicationFactor: 3 });
    await expect(rf).rejects.toThrow(/1 live/);
    expect(await codeOf(c.dropTable('nope'))).toBe('TABLE_NOT_FOUND');

    // Unknown table, malformed rows.
    expect(await codeOf(c.table('nope').upsert({ id: 1n }))).toBe('TABLE_NOT_FOUND');
    const t = c.table('ok_table');
    expect(await codeOf(t.upsert({ id: 'x', v: 'a' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(t.upsert({ id: 1n, v: 5 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(t.upsert({ id: 1n, nope: 'a' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(t.upsert({ v: 'no key' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(t.upsert({ id: 1.5, v: 'a' }))).toBe('INVALID_ARGUMENT');
    // Malformed rows that reach the tserver directly (wrong hash, unknown column id, unknown tablet).
    const loc = await c.tableLocations('ok_table');
    const rpc = c.rpcClient();
    const tabletId = loc.tablets[0]!.tabletId;
    expect(await codeOf(rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId, ops: [{ type: 'UPSERT', key: { hash: 7, hashed: [{ int64Value: 1n }], range: [] }, columns: [] }] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId, ops: [{ type: 'BOGUS' }] }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId: 'no-such-tablet', ops: [] }))).toBe('TABLET_NOT_FOUND');
    // Coalesced writes (`more`) are transactional only, and bounded in count.
    const okOp = { type: 'UPSERT', key: { hash: 7, hashed: [{ int64Value: 1n }], range: [] }, columns: [] };
    await expect(rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId, ops: [okOp], more: [{ ops: [okOp] }] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('only transactional writes') });
    const many = Array.from({ length: 256 }, () => ({ ops: [okOp], txn: { txnId: 'a'.repeat(32) } }));
    await expect(rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId, ops: [okOp], txn: { txnId: 'a'.repeat(32) }, more: many })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('at most 256') });
    // Each coalesced write fails on its own: one result per write, the request itself succeeds.
    const mixed = await rpc.call(ts.rpcAddress, tabletServerMethods().write, { tabletId, ops: [{ type: 'BOGUS' }], txn: { txnId: 'b'.repeat(32) }, more: [{ ops: [okOp], txn: { txnId: 'c'.repeat(32) } }] });
    expect(mixed.results?.map((r) => [r.code, r.message])).toEqual([
      ['INVALID_ARGUMENT', expect.stringContaining('unknown row op type')],
      ['INVALID_ARGUMENT', expect.stringContaining('does not match its hash components')],
    ]);
    expect(await codeOf(rpc.call(master.rpcAddress, masterMethods().getTableLocations, { name: 'nope' }))).toBe('TABLE_NOT_FOUND');

    // The CLI fails with one line naming the code and a non-zero status.
    const r = spawnSync(process.execPath, [CLI, 'get', 'nope', 'id=1', `--master_addresses=${master.rpcAddress}`], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(/^error: TABLE_NOT_FOUND: /);

    // Everything is still up and serving.
    expect(cl.isRunning(master) && cl.isRunning(ts)).toBe(true);
    expect(await isHealthy(`http://${master.webAddress}`)).toBe(true);
    await t.upsert({ id: 1n, v: 'still works' });
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, v: 'still works' });
  }, 120_000);
});
