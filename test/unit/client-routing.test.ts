import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeDocKeyBytes, encodeKeyComponents, partitionHash, type KeyValue } from '../../common/partition-hash';
import { ByteWriter } from '../../docdb/encoding/byte-buffer';
import { encodeDocKey, partitionHash as docdbPartitionHash } from '../../docdb/encoding/doc-key';
import { encodePrimitive } from '../../docdb/encoding/primitive';

const keyValue: fc.Arbitrary<KeyValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
  fc.double(),
  fc.string({ unit: 'grapheme' }),
  fc.uint8Array({ maxLength: 20 }),
);

function docdbBytes(vs: readonly KeyValue[]): Uint8Array {
  const w = new ByteWriter(16);
  for (const v of vs) encodePrimitive(w, v);
  return Uint8Array.from(w.raw().subarray(0, w.length));
}

describe('client routing: partition hash and key bytes agree with docdb', () => {
  it('routing: component bytes equal docdb/encoding ascending bytes for every value type', () => {
    fc.assert(fc.property(fc.array(keyValue, { maxLength: 4 }), (vs) => {
      expect(Buffer.from(encodeKeyComponents(vs)).toString('hex')).toBe(Buffer.from(docdbBytes(vs)).toString('hex'));
    }), { numRuns: 500 });
  });

  it('routing: the client partition hash is the docdb partition hash', () => {
    fc.assert(fc.property(fc.array(keyValue, { minLength: 1, maxLength: 3 }), (vs) => {
      expect(partitionHash(vs)).toBe(docdbPartitionHash(vs));
    }), { numRuns: 500 });
  });

  it('routing: DocKey bytes for scan bounds equal docdb encodeDocKey', () => {
    fc.assert(fc.property(fc.array(keyValue, { maxLength: 2 }), fc.array(keyValue, { maxLength: 2 }), (hashed, range) => {
      const hash = partitionHash(hashed);
      const ours = Buffer.from(encodeDocKeyBytes(hash, hashed, range)).toString('hex');
      expect(ours).toBe(encodeDocKey({ hash, hashed, range }).toString('hex'));
    }), { numRuns: 300 });
  });
});

import { DbError, ErrorCode } from '../../common/errors';
import { tabletForHash, type TableLocations } from '../../client/meta-cache';
import { MasterProxy } from '../../client/master-proxy';
import { Deadline } from '../../client/retry-policy';
import { TableSchema } from '../../client/table-schema';
import type { MethodDef, RpcClient } from '../../rpc/types';

const schema = new TableSchema('tid', 'demo', {
  schema: {
    columns: [
      { name: 'id', id: 1, type: 'int64', nullable: false },
      { name: 'r', id: 2, type: 'string', nullable: false },
      { name: 'v', id: 3, type: 'double', nullable: true },
    ],
    hashColumns: ['id'],
    rangeColumns: ['r'],
  },
});

describe('client routing: rows, tablets, leaders', () => {
  it('routing: a row becomes a RowOp with the docdb hash; int64 accepts safe-integer numbers', () => {
    const { hash, op } = schema.rowOp('UPSERT', { id: 7, r: 'a', v: 1.5 });
    expect(hash).toBe(docdbPartitionHash([7n]));
    expect(op.key).toEqual({ hash, hashed: [{ int64Value: 7n }], range: [{ stringValue: 'a' }] });
    expect(op.columns).toEqual([{ columnId: 3, value: { doubleValue: 1.5 } }]);
    expect(() => schema.rowOp('UPSERT', { id: 1.5, r: 'a' })).toThrow(DbError);
    expect(() => schema.rowOp('UPSERT', { id: 1n })).toThrow(/key column r/);
    expect(() => schema.rowOp('UPSERT', { id: 1n, r: 'a', zz: 1 })).toThrow(/no column zz/);
  });

  it('routing: every hash maps to the one tablet whose [start, end) holds it', () => {
    const loc = { schema, loadedAtMs: 0, tablets: [0, 21845, 43690].map((start, i, a) => ({ tabletId: `t${i}`, start, end: a[i + 1] ?? 65536, replicas: [] })) } as TableLocations;
    for (const h of [0, 1, 21844, 21845, 43689, 43690, 65535]) {
      const t = tabletForHash(loc, h);
      expect(h >= t.start && h < t.end).toBe(true);
    }
  });

  it('routing: range bounds are encoded DocKey prefixes inside the hash key; without hashKey they are refused', () => {
    const b = schema.scanBounds({ id: 1n }, { r: 'b' }, { r: 'd' });
    const hash = docdbPartitionHash([1n]);
    expect(Buffer.from(b.start).toString('hex')).toBe(encodeDocKey({ hash, hashed: [1n], range: ['b'] }).subarray(0, -1).toString('hex'));
    expect(Buffer.compare(Buffer.from(b.start), Buffer.from(b.end))).toBe(-1);
    expect(() => schema.scanBounds(undefined, { r: 'b' }, undefined)).toThrow(/hashKey/);
  });

  it('routing: a lower range bound alone covers every later key of the hash key, and none of another hash key', () => {
    const b = schema.scanBounds({ id: 1n }, { r: 'b' }, undefined);
    const hash = docdbPartitionHash([1n]);
    const inside = (k: Buffer): boolean => Buffer.compare(k, Buffer.from(b.start)) >= 0 && Buffer.compare(k, Buffer.from(b.end)) < 0;
    for (const r of ['b', 'ba', 'c', 'zzzz']) expect(inside(encodeDocKey({ hash, hashed: [1n], range: [r] }))).toBe(true);
    expect(inside(encodeDocKey({ hash, hashed: [1n], range: ['a'] }))).toBe(false);
    const other = docdbPartitionHash([2n]);
    expect(inside(encodeDocKey({ hash: other, hashed: [2n], range: ['c'] }))).toBe(false);
  });

  it('routing: the master proxy follows NOT_THE_LEADER hints and skips unreachable masters', async () => {
    const calls: string[] = [];
    const rpc: RpcClient = {
      call<Req, Resp>(address: string, _m: MethodDef<Req, Resp>): Promise<Resp> {
        calls.push(address);
        if (address === 'm1') return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, 'down', {}, { retryable: true }));
        if (address === 'm2') return Promise.reject(new DbError(ErrorCode.NOT_THE_LEADER, 'no', { leaderHint: 'm3' }));
        return Promise.resolve({ ok: address } as Resp);
      },
      send: () => undefined,
      close: () => Promise.resolve(),
    };
    const p = new MasterProxy(rpc, ['m1', 'm2', 'm3']);
    const m = { service: 's', method: 'x' } as MethodDef<unknown, { ok: string }>;
    expect(await p.call(m, {}, new Deadline(5000))).toEqual({ ok: 'm3' });
    expect(calls.slice(0, 3)).toEqual(['m1', 'm2', 'm3']);
    // the leader is remembered
    await p.call(m, {}, new Deadline(5000));
    expect(calls[calls.length - 1]).toBe('m3');
  });

  it('routing: the master proxy gives up on a leader master that hangs after singleCallTimeoutMs for reads (not for DDL, which may take long) and finds the leader elsewhere', async () => {
    const calls: Array<[string, number | undefined]> = [];
    const rpc: RpcClient = {
      call<Req, Resp>(address: string, _m: MethodDef<Req, Resp>, _r?: Req, o?: { timeoutMs?: number }): Promise<Resp> {
        calls.push([address, o?.timeoutMs]);
        // m1 is paused: no answer; m2 was elected meanwhile.
        if (address === 'm1') return new Promise((_, reject) => setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, 'no answer')), o?.timeoutMs ?? 0));
        return Promise.resolve({ ok: address } as Resp);
      },
      send: () => undefined,
      close: () => Promise.resolve(),
    };
    const p = new MasterProxy(rpc, ['m1', 'm2', 'm3'], 100);
    const m = { service: 's', method: 'x' } as MethodDef<unknown, { ok: string }>;
    expect(await p.call(m, {}, new Deadline(5000), true, true)).toEqual({ ok: 'm2' });
    expect(calls[0]).toEqual(['m1', 100]);
    // DDL keeps the whole deadline per attempt (a CREATE resent after a slow first attempt would
    // answer ALREADY_EXISTS to its own creator).
    const ddl = new MasterProxy(rpc, ['m1', 'm2'], 100);
    await expect(ddl.call(m, {}, new Deadline(300))).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
    expect(calls[calls.length - 1]![1]).toBeGreaterThan(100);
  });

  it('routing: a deadline that passes while masters are down is TIMED_OUT', async () => {
    const rpc: RpcClient = {
      call: () => Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, 'down', {}, { retryable: true })),
      send: () => undefined,
      close: () => Promise.resolve(),
    };
    const p = new MasterProxy(rpc, ['a']);
    await expect(p.call({ service: 's', method: 'x' } as MethodDef<unknown, unknown>, {}, new Deadline(100))).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
  });
});

import { TesseraClient } from '../../client/tessera-client';
import { addressTranslator } from '../../client/address-translation';
import { ReplicaHealth } from '../../client/replica-health';
import { MetaCache } from '../../client/meta-cache';
import type { Transport } from '../../rpc/types';
import type { WriteRequestPB } from '../../rpc/service-methods';

/** A transport whose one client records every dialled address and plays a master and three tservers. */
function fakeCluster(o: { failedLeader?: boolean; hungLeader?: boolean } = {}): { transport: Transport; dialled: string[]; writes: Array<{ address: string; req: WriteRequestPB }> } {
  const dialled: string[] = [];
  const writes: Array<{ address: string; req: WriteRequestPB }> = [];
  const replicas = ['n0', 'n1', 'n2'].map((n, i) => ({ tserverUuid: `ts${i}`, rpcAddress: `${n}:9100`, role: i === 1 ? 'LEADER' : 'FOLLOWER' }));
  const client: RpcClient = {
    call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, _req?: Req, opts?: { timeoutMs?: number }): Promise<Resp> {
      dialled.push(address);
      if (m.method === 'Write') writes.push({ address, req: _req as WriteRequestPB });
      // hungLeader: the replica the master calls leader was SIGSTOPped: it never answers (the call
      // times out after its own timeout, as the WebSocket client's does).
      if (o.hungLeader && (m.method === 'Write' || m.method === 'Read') && address === '127.0.0.1:19101') {
        return new Promise((_, reject) => setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, `no answer from ${address}`)), opts?.timeoutMs ?? 0));
      }
      if (o.hungLeader && m.method === 'Read' && address === '127.0.0.1:19102') return Promise.resolve({ rows: [], found: [false], readHt: 1n } as Resp);
      const reply = (v: unknown): Promise<Resp> => Promise.resolve(v as Resp);
      if (m.method === 'ListTables') return address === '127.0.0.1:17100' ? reply({ tables: [] }) : Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `no route to ${address}`, {}, { retryable: true }));
      if (m.method === 'GetTableLocations') return reply({ table: { id: 'tid', name: 'demo', schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }, { name: 'v', id: 2, type: 'string', nullable: true }], hashColumns: ['id'], rangeColumns: [] } }, tablets: [{ tabletId: 't0', partition: { start: 0, end: 65536 }, replicas }] });
      // failedLeader: the replica the master calls leader stopped after a storage failure (FAILED):
      // it names no leader; n0 does not lead either but knows n2 does.
      if (o.failedLeader && m.method === 'Write' && address === '127.0.0.1:19101') return Promise.reject(new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet t0 is FAILED'));
      if (o.failedLeader && m.method === 'Write' && address === '127.0.0.1:19100') return Promise.reject(new DbError(ErrorCode.NOT_THE_LEADER, 'not leader', { leaderHint: 'n2:9100' }));
      // The replica the master calls leader has lost leadership: its hint names n2 by its advertised address.
      if (m.method === 'Write' && address === '127.0.0.1:19101') return Promise.reject(new DbError(ErrorCode.NOT_THE_LEADER, 'not leader', { leaderHint: 'n2:9100' }));
      if (m.method === 'Write' && address === '127.0.0.1:19102') return reply({});
      return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `no route to ${address}`, {}, { retryable: true }));
    },
    send: () => undefined,
    close: () => Promise.resolve(),
  };
  return { transport: { createClient: () => client, createServer: () => { throw new Error('not used'); } }, dialled, writes };
}

describe('client routing: address translation (a host client reaching a Docker lab)', () => {
  const addressMap = { 'n0:7100': '127.0.0.1:17100', 'n0:9100': '127.0.0.1:19100', 'n1:9100': '127.0.0.1:19101', 'n2:9100': '127.0.0.1:19102' };

  it('routing: with addressMap, masters, tablet leaders and NOT_THE_LEADER hints are dialled at their mapped addresses', async () => {
    const { transport, dialled } = fakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, timeoutMs: 5_000 });
    await c.table('demo').upsert({ id: 1n, v: 'x' });
    await c.close();
    expect(dialled).toEqual(['127.0.0.1:17100', '127.0.0.1:17100', '127.0.0.1:19101', '127.0.0.1:19102']);
    expect(dialled.some((a) => a.startsWith('n'))).toBe(false);
  });

  it('routing: a replica answering SERVICE_UNAVAILABLE (FAILED) is left for the other replicas, whose hint finds the leader', async () => {
    const { transport, dialled } = fakeCluster({ failedLeader: true });
    const c = await TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, timeoutMs: 5_000 });
    await c.table('demo').upsert({ id: 1n, v: 'x' });
    await c.close();
    const writes = dialled.slice(2);
    expect(writes[0]).toBe('127.0.0.1:19101');
    expect(writes[writes.length - 1]).toBe('127.0.0.1:19102');
    expect(writes.filter((a) => a === '127.0.0.1:19101').length).toBeLessThanOrEqual(2);
  });

  it('routing: a call to a leader that hangs (SIGSTOP) gives up after rpcSingleCallTimeoutMs and finds the leader elsewhere; an insert is resent as the same retryable request', async () => {
    const { transport, dialled, writes } = fakeCluster({ hungLeader: true });
    const c = await TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, timeoutMs: 2_000, rpcSingleCallTimeoutMs: 100 });
    // Without the cap each would wait on the hung leader until the 2 s deadline and fail TIMED_OUT.
    await c.table('demo').upsert({ id: 1n, v: 'x' });
    expect(await c.table('demo').get({ id: 1n })).toBeUndefined();
    expect(dialled.slice(2)[0]).toBe('127.0.0.1:19101');
    expect(dialled).toContain('127.0.0.1:19102');
    // An insert is resent too: every attempt carries the client's id and the same request id, so a
    // leader that did the first attempt answers the copy instead of inserting again.
    await c.close();
    // (A new client: the first attempt goes to the replica the master calls leader — the hung one.)
    const c2 = await TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, timeoutMs: 2_000, rpcSingleCallTimeoutMs: 100 });
    writes.length = 0;
    await c2.table('demo').insert({ id: 2n, v: 'y' }, { timeoutMs: 1_000 });
    expect(writes[0]!.address).toBe('127.0.0.1:19101');
    expect(writes[writes.length - 1]!.address).toBe('127.0.0.1:19102');
    const ids = new Set(writes.map((w) => `${w.req.clientId}/${w.req.requestId}`));
    expect(ids.size).toBe(1);
    expect(writes[0]!.req.clientId).toMatch(/^[0-9a-f]{24}$/);
    expect(writes[0]!.req.requestId).toBeGreaterThan(0n);
    expect(writes[0]!.req.minRunningRequestId).toBe(writes[0]!.req.requestId);
    await c2.close();
    await expect(TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, rpcSingleCallTimeoutMs: -1 })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });

  it('routing: a leader that hung is suspect for a while — later operations go to the other replicas even though the master still reports it as leader', async () => {
    const { transport, dialled } = fakeCluster({ hungLeader: true });
    const c = await TesseraClient.connect({ masterAddresses: ['n0:7100'], addressMap, transport, timeoutMs: 2_000, rpcSingleCallTimeoutMs: 100 });
    await c.table('demo').upsert({ id: 1n, v: 'x' }); // the first attempt waits on the hung leader
    expect(dialled).toContain('127.0.0.1:19101');
    const from = dialled.length;
    for (let i = 2; i <= 6; i++) await c.table('demo').upsert({ id: BigInt(i), v: 'x' });
    expect(dialled.slice(from).filter((a) => a === '127.0.0.1:19101')).toEqual([]);
    await c.close();
  });

  it('routing: ReplicaHealth suspects a server only when it did not answer (the attempt timed out, the connection failed), never for an error the server sent, and forgets it after a while', () => {
    let now = 0;
    const h = new ReplicaHealth(1_000, () => now);
    h.noteFailure('a', new DbError(ErrorCode.TIMED_OUT, 'Write to a timed out after 100 ms', { address: 'a', timeoutMs: 100 }));
    h.noteFailure('b', DbError.fromWire({ code: ErrorCode.TIMED_OUT, message: 'write not committed within 100 ms' }));
    h.noteFailure('c', new DbError(ErrorCode.NETWORK_ERROR, 'connection refused'));
    h.noteFailure('d', DbError.fromWire({ code: ErrorCode.NETWORK_ERROR, message: 'the server could not reach its status tablet' }));
    h.noteFailure('e', new DbError(ErrorCode.BACKPRESSURE, 'too many calls in flight'));
    // Timed out, but other answers came from it meanwhile: alive, this call takes long (a conflict wait).
    h.noteFailure('f', new DbError(ErrorCode.TIMED_OUT, 'Write to f timed out after 100 ms', { address: 'f', timeoutMs: 100, heard: true }));
    expect(['a', 'b', 'c', 'd', 'e', 'f'].filter((x) => h.isSuspect(x))).toEqual(['a', 'c']);
    expect([0, 1, 2].map((i) => h.pick(['a', 'b', 'c'], i))).toEqual(['b', 'b', 'b']);
    expect(h.pick(['a', 'c'], 1)).toBe('c'); // all suspect: any of them
    h.noteAnswer('a');
    expect(h.isSuspect('a')).toBe(false);
    now = 1_001;
    expect(h.isSuspect('c')).toBe(false);
    expect(new ReplicaHealth(0).pick([], 0)).toBeUndefined();
  });

  it('routing: reloaded locations do not name a suspect server leader (the master learns of a new leader only from heartbeats)', async () => {
    const locations = { table: { id: 'tid', name: 'demo', schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }], hashColumns: ['id'], rangeColumns: [] } }, tablets: [{ tabletId: 't0', partition: { start: 0, end: 65536 }, replicas: [{ tserverUuid: 'ts1', rpcAddress: 'n1:9100', role: 'LEADER' }, { tserverUuid: 'ts2', rpcAddress: 'n2:9100', role: 'FOLLOWER' }] }] };
    const master = { call: () => Promise.resolve(locations) } as unknown as MasterProxy;
    const health = new ReplicaHealth(60_000);
    const cache = new MetaCache(master, health);
    const d = new Deadline(1_000);
    await cache.get('demo', d);
    expect(cache.leaderOf('t0')).toBe('n1:9100');
    health.noteFailure('n1:9100', new DbError(ErrorCode.TIMED_OUT, 'no answer'));
    cache.setLeader('t0', 'n2:9100'); // learnt from a hint meanwhile
    cache.dropLeader('t0', 'n1:9100'); // a late failure of a call to n1 leaves it
    expect(cache.leaderOf('t0')).toBe('n2:9100');
    cache.dropLeader('t0', 'n2:9100');
    cache.invalidate('demo');
    await cache.get('demo', d);
    expect(cache.leaderOf('t0')).toBeUndefined();
    health.noteAnswer('n1:9100');
    cache.invalidate('demo');
    await cache.get('demo', d);
    expect(cache.leaderOf('t0')).toBe('n1:9100');
  });

  it('routing: without a translation the advertised addresses are dialled as they are (and fail here)', async () => {
    const { transport, dialled } = fakeCluster();
    await expect(TesseraClient.connect({ masterAddresses: ['n0:7100'], transport, timeoutMs: 300 })).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
    expect(new Set(dialled)).toEqual(new Set(['n0:7100']));
  });

  it('routing: addressMap names win, translateAddress sees the rest, unknown addresses pass through', () => {
    const t = addressTranslator({ addressMap: { 'a:1': 'b:2' }, translateAddress: (x) => (x.startsWith('n') ? `127.0.0.1:${x.split(':')[1]}` : x) })!;
    expect([t('a:1'), t('n5:9100'), t('10.0.0.1:7')]).toEqual(['b:2', '127.0.0.1:9100', '10.0.0.1:7']);
    expect(addressTranslator({})).toBeUndefined();
    expect(addressTranslator({ addressMap: {} })).toBeUndefined();
  });
});
