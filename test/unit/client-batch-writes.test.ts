/**
 * Client write coalescing (ConnectOptions.batchWrites): single-row upserts/deletes issued in the same
 * event-loop turn to the same tablet go out as one Write RPC, each caller still getting its own
 * outcome; inserts/updates and transactional writes are never merged. A fake transport plays the
 * master and one tserver that leads both tablets of `demo`.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { TesseraClient } from '../../client/tessera-client';
import { COALESCED_ROWS_MAX } from '../../client/table';
import type { MethodDef, RpcClient, Transport } from '../../rpc/types';

interface ReadReq {
  tabletId: string;
  keys: Array<{ hash: number; hashed: Array<{ int64Value?: bigint }> }>;
}

interface WriteReq {
  tabletId: string;
  ops: Array<{ type: string }>;
}

function fakeCluster(failTablet?: string): { transport: Transport; writes: WriteReq[]; reads: ReadReq[] } {
  const writes: WriteReq[] = [];
  const reads: ReadReq[] = [];
  const replicas = [{ tserverUuid: 'ts0', rpcAddress: '127.0.0.1:9100', role: 'LEADER' }];
  const client: RpcClient = {
    call<Req, Resp>(_address: string, m: MethodDef<Req, Resp>, req: Req): Promise<Resp> {
      const reply = (v: unknown): Promise<Resp> => Promise.resolve(v as Resp);
      if (m.method === 'ListTables') return reply({ tables: [] });
      if (m.method === 'GetTableLocations') {
        return reply({
          table: { id: 'tid', name: 'demo', schema: { columns: [{ name: 'id', id: 1, type: 'int64', nullable: false }, { name: 'v', id: 2, type: 'string', nullable: true }], hashColumns: ['id'], rangeColumns: [] } },
          tablets: [
            { tabletId: 'a', partition: { start: 0, end: 32768 }, replicas },
            { tabletId: 'b', partition: { start: 32768, end: 65536 }, replicas },
          ],
        });
      }
      if (m.method === 'Read') {
        const r = req as unknown as ReadReq;
        reads.push(r);
        // Even ids exist with v = 'r<id>'; rows line up with the keys.
        const ids = r.keys.map((k) => BigInt(k.hashed[0]?.int64Value ?? -1n));
        return reply({
          found: ids.map((id) => id % 2n === 0n),
          rows: ids.map((id, i) => ({ key: r.keys[i], columns: id % 2n === 0n ? [{ columnId: 2, value: { stringValue: `r${id}` } }] : [], writeHt: 1n })),
          readHt: 5n,
          propagatedHt: 5n,
        });
      }
      if (m.method === 'Write') {
        const w = req as unknown as WriteReq;
        writes.push({ tabletId: w.tabletId, ops: w.ops.map((o) => ({ type: o.type })) });
        if (w.tabletId === failTablet) return Promise.reject(new DbError(ErrorCode.INVALID_ARGUMENT, 'rejected by the test'));
        return reply({});
      }
      return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `unexpected ${m.method}`, {}, { retryable: false }));
    },
    send: () => undefined,
    close: () => Promise.resolve(),
  };
  return { transport: { createClient: () => client, createServer: () => { throw new Error('not used'); } }, writes, reads };
}

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: BigInt(i), v: `v${i}` }));

describe('client write coalescing', () => {
  it('batch writes: concurrent upserts and deletes become one Write RPC per tablet; awaited ones stay one each', async () => {
    const { transport, writes } = fakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'], transport, timeoutMs: 5_000 });
    const t = c.table('demo');
    await t.upsert({ id: 1000n, v: 'warm' }); // locations cached: the batch below starts in one turn
    writes.length = 0;
    await Promise.all([...rows(50).map((r) => t.upsert(r)), t.delete({ id: 99n })]);
    expect(writes.reduce((n, w) => n + w.ops.length, 0)).toBe(51);
    expect(writes.length).toBe(2);
    expect(new Set(writes.map((w) => w.tabletId))).toEqual(new Set(['a', 'b']));
    writes.length = 0;
    for (const r of rows(3)) await t.upsert(r);
    expect(writes.map((w) => w.ops.length)).toEqual([1, 1, 1]);
    await c.close();
  });

  it('batch writes: a batch holds at most COALESCED_ROWS_MAX rows; inserts are never merged', async () => {
    const { transport, writes } = fakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'], transport, timeoutMs: 5_000 });
    const t = c.table('demo');
    await t.upsert({ id: 1n, v: 'warm' });
    writes.length = 0;
    await Promise.all(rows(COALESCED_ROWS_MAX * 2 + 10).map((r) => t.upsert(r)));
    expect(Math.max(...writes.map((w) => w.ops.length))).toBeLessThanOrEqual(COALESCED_ROWS_MAX);
    expect(writes.reduce((n, w) => n + w.ops.length, 0)).toBe(COALESCED_ROWS_MAX * 2 + 10);
    writes.length = 0;
    await Promise.all(rows(5).map((r) => t.insert(r)));
    expect(writes.map((w) => w.ops.length)).toEqual([1, 1, 1, 1, 1]);
    await c.close();
  });

  it("batch writes: every operation of a failed batch fails with the batch's error; the other tablet's succeed", async () => {
    const { transport, writes } = fakeCluster('a');
    const c = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'], transport, timeoutMs: 5_000 });
    const t = c.table('demo');
    await t.upsert({ id: 0n, v: 'warm' }).catch(() => undefined);
    writes.length = 0;
    const results = await Promise.allSettled(rows(40).map((r) => t.upsert(r)));
    const byTablet = new Map(writes.map((w) => [w.tabletId, w.ops.length]));
    const failed = results.filter((r) => r.status === 'rejected');
    expect(failed.length).toBe(byTablet.get('a'));
    expect(results.length - failed.length).toBe(byTablet.get('b'));
    for (const f of failed) expect((f as PromiseRejectedResult).reason).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await c.close();
  });

  it('batch writes: batchWrites false sends one RPC per operation', async () => {
    const { transport, writes } = fakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'], transport, timeoutMs: 5_000, batchWrites: false });
    const t = c.table('demo');
    await t.upsert({ id: 1n, v: 'warm' });
    writes.length = 0;
    await Promise.all(rows(20).map((r) => t.upsert(r)));
    expect(writes.length).toBe(20);
    await c.close();
  });

  it('batch reads: concurrent point reads become one Read RPC per tablet, each caller gets its own row', async () => {
    const { transport, reads } = fakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['127.0.0.1:7100'], transport, timeoutMs: 5_000 });
    const t = c.table('demo');
    await t.upsert({ id: 1n, v: 'warm' });
    const got = await Promise.all(Array.from({ length: 30 }, (_, i) => t.get({ id: BigInt(i) })));
    expect(reads.length).toBe(2);
    expect(reads.reduce((n, r) => n + r.keys.length, 0)).toBe(30);
    got.forEach((row, i) => expect(row).toEqual(i % 2 === 0 ? { id: BigInt(i), v: `r${i}` } : undefined));
    await c.close();
  });
});
