/**
 * The client's coalescing of transactional writes (client/txn-write-coalescer.ts) against a scripted
 * tablet invoker: one request per tablet per turn, results matched to writes in order, retryable
 * per-write codes resent alone, a server that ignores `more` handled, request failures shared.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { WriteRequestPB, WriteResponsePB } from '../../rpc/service-methods';
import { Deadline } from '../../client/retry-policy';
import type { TabletInvoker } from '../../client/tablet-invoker';
import { RequestIds } from '../../client/request-ids';
import { COALESCED_TXN_OPS_MAX, COALESCED_TXN_WRITES_MAX, TxnWriteCoalescer } from '../../client/txn-write-coalescer';
import { approxOpBytes, WRITE_BYTES_PER_RPC_MAX } from '../../client/write-size';

type Answer = (req: WriteRequestPB) => WriteResponsePB | Promise<WriteResponsePB>;

function scripted(answer: Answer): { invoker: TabletInvoker; sent: WriteRequestPB[]; ids: Array<readonly number[] | undefined> } {
  const sent: WriteRequestPB[] = [];
  const ids: Array<readonly number[] | undefined> = [];
  const invoker = {
    propagatedHt: 7n,
    observeHt: () => undefined,
    requests: new RequestIds(),
    callWrite: async (_table: string, _where: unknown, makeReq: () => WriteRequestPB, _d: unknown, o?: { requestIds?: readonly number[] }) => {
      ids.push(o?.requestIds);
      const req = makeReq();
      sent.push(req);
      return answer(req);
    },
  } as unknown as TabletInvoker;
  return { invoker, sent, ids };
}

const txn = (id: string) => ({ txnId: id, statusTablet: 's', isolation: 'snapshot', priority: 1, startHt: 1n });
const op = (k: number) => [{ type: 'UPSERT', key: { hashComponents: [{ int64: BigInt(k) }] } }] as never;
const ok = (n: number): WriteResponsePB => ({ writeHt: 5n, propagatedHt: 9n, results: Array.from({ length: n }, () => ({ writeHt: 5n })) });

describe('TxnWriteCoalescer', () => {
  it('coalescer: writes of one turn to one tablet go in one request, in order; other tablets get their own', async () => {
    const { invoker, sent } = scripted((req) => ok(1 + (req.more?.length ?? 0)));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const alone = () => Promise.reject(new Error('not expected'));
    await Promise.all([
      c.write('t', 'A', 0, op(1), txn('a'), d, alone),
      c.write('t', 'A', 0, op(2), txn('b'), d, alone),
      c.write('t', 'B', 0, op(3), txn('c'), d, alone),
      c.write('t', 'A', 0, op(4), txn('d'), d, alone),
    ]);
    expect(sent.map((r) => [r.tabletId, r.txn!.txnId, ...(r.more ?? []).map((m) => m.txn!.txnId)])).toEqual([
      ['A', 'a', 'b', 'd'],
      ['B', 'c'],
    ]);
    expect(sent[1]!.more).toBeUndefined(); // a lone write is a plain single write
    expect(sent[0]!.propagatedHt).toBe(7n);
    expect(c.stats).toEqual({ requests: 2, writes: 4 });
  });

  it('coalescer: writes of large rows are split so no request carries more than WRITE_BYTES_PER_RPC_MAX of values', async () => {
    const { invoker, sent } = scripted((req) => ok(1 + (req.more?.length ?? 0)));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const alone = () => Promise.reject(new Error('not expected'));
    const mib = 'v'.repeat(1 << 20);
    const bigOp = (k: number) => [{ type: 'UPSERT', key: { hashComponents: [{ int64: BigInt(k) }] }, columns: [{ columnId: 1, value: { stringValue: mib } }] }] as never;
    await Promise.all(Array.from({ length: 10 }, (_, i) => c.write('t', 'A', 0, bigOp(i), txn(`t${i}`), d, alone)));
    const perRequest = sent.map((r) => [r, ...(r.more ?? [])].map((w) => w.txn!.txnId));
    // 1 MiB and a little per write: 3 fit in 4 MiB, so 3 + 3 + 3 + 1, in order.
    expect(perRequest).toEqual([['t0', 't1', 't2'], ['t3', 't4', 't5'], ['t6', 't7', 't8'], ['t9']]);
    for (const r of sent) {
      const bytes = [r, ...(r.more ?? [])].flatMap((w) => w.ops ?? []).reduce((n, o) => n + approxOpBytes(o), 0);
      expect(bytes).toBeLessThanOrEqual(WRITE_BYTES_PER_RPC_MAX);
    }
    // One write larger than the cap still goes (alone).
    sent.length = 0;
    const huge = [{ type: 'UPSERT', key: { hashComponents: [{ int64: 99n }] }, columns: [{ columnId: 1, value: { stringValue: 'h'.repeat(5 << 20) } }] }] as never;
    await Promise.all([c.write('t', 'A', 0, op(1), txn('small'), d, alone), c.write('t', 'A', 0, huge, txn('huge'), d, alone)]);
    expect(sent.map((r) => [r, ...(r.more ?? [])].map((w) => w.txn!.txnId))).toEqual([['small'], ['huge']]);
  });

  it('coalescer: each write gets its own result; a retryable one is resent alone (as the same retryable request), a conflict is not', async () => {
    const { invoker, ids } = scripted(() => ({
      propagatedHt: 9n,
      results: [{ writeHt: 5n }, { code: ErrorCode.NOT_THE_LEADER, message: 'moved' }, { code: ErrorCode.TXN_CONFLICT, message: 'lost' }, { code: ErrorCode.LEADER_NOT_READY, message: 'not yet' }],
    }));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const resent: string[] = [];
    const resentIds: number[] = [];
    const alone = (id: string, fails = false) => (requestId: number) => {
      resent.push(id);
      resentIds.push(requestId);
      return fails ? Promise.reject(new DbError(ErrorCode.TIMED_OUT, 'gave up')) : Promise.resolve();
    };
    const r = await Promise.allSettled([
      c.write('t', 'A', 0, op(1), txn('a'), d, alone('a')),
      c.write('t', 'A', 0, op(2), txn('b'), d, alone('b')),
      c.write('t', 'A', 0, op(3), txn('c'), d, alone('c')),
      c.write('t', 'A', 0, op(4), txn('d'), d, alone('d', true)),
    ]);
    expect(resent).toEqual(['b', 'd']);
    expect(r.map((x) => (x.status === 'fulfilled' ? 'ok' : (x.reason as DbError).code))).toEqual(['ok', 'ok', ErrorCode.TXN_CONFLICT, ErrorCode.TIMED_OUT]);
    // Each write has its own request id in the coalesced request, and keeps it when resent alone: a
    // copy of the coalesced request (the old leader's entry) may have done it already.
    expect(ids[0]).toHaveLength(4);
    expect(new Set(ids[0]).size).toBe(4);
    expect(resentIds).toEqual([ids[0]![1], ids[0]![3]]);
    expect(invoker.requests.runningCount).toBe(0);
  });

  it('coalescer: a server that ignores `more` wrote the first write only; the others are resent alone', async () => {
    const { invoker } = scripted(() => ({ writeHt: 5n, propagatedHt: 9n }));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const resent: string[] = [];
    const alone = (id: string) => () => {
      resent.push(id);
      return Promise.resolve();
    };
    await Promise.all(['a', 'b', 'c'].map((id, i) => c.write('t', 'A', 0, op(i), txn(id), d, alone(id))));
    expect(resent).toEqual(['b', 'c']);
  });

  it('coalescer: a failed request fails every write in it; a full request is sent at once', async () => {
    const { invoker, sent } = scripted(() => Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, 'gone')));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const alone = () => Promise.reject(new Error('not expected'));
    const n = COALESCED_TXN_WRITES_MAX + 3;
    const r = await Promise.allSettled(Array.from({ length: n }, (_, i) => c.write('t', 'A', 0, op(i), txn(`x${i}`), d, alone)));
    expect(r.every((x) => x.status === 'rejected' && (x.reason as DbError).code === ErrorCode.NETWORK_ERROR)).toBe(true);
    expect(sent.map((s) => 1 + (s.more?.length ?? 0))).toEqual([COALESCED_TXN_WRITES_MAX, 3]);
  });

  it('coalescer: fast-path commits of one turn to one tablet share a single_tablet_commit request apart from intent writes; each gets its own commit time; a refused one is resent alone', async () => {
    const { invoker, sent } = scripted((req) => {
      if (!req.singleTabletCommit) return ok(1 + (req.more?.length ?? 0));
      return { propagatedHt: 9n, writeHt: 31n, results: [{ writeHt: 30n }, { writeHt: 31n }, { code: ErrorCode.NOT_SUPPORTED, message: 'fast path off' }, { code: ErrorCode.TXN_CONFLICT, message: 'lost' }] };
    });
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const resent: string[] = [];
    const alone = (id: string) => () => {
      resent.push(id);
      return Promise.resolve(77n);
    };
    const r = await Promise.allSettled([
      c.write('t', 'A', 0, op(1), txn('f1'), d, alone('f1'), true),
      c.write('t', 'A', 0, op(2), txn('i1'), d, alone('i1')),
      c.write('t', 'A', 0, op(3), txn('f2'), d, alone('f2'), true),
      c.write('t', 'A', 0, op(4), txn('f3'), d, alone('f3'), true),
      c.write('t', 'A', 0, op(5), txn('f4'), d, alone('f4'), true),
    ]);
    expect(sent.map((q) => [q.singleTabletCommit === true, q.txn!.txnId, ...(q.more ?? []).map((m) => m.txn!.txnId)])).toEqual([
      [true, 'f1', 'f2', 'f3', 'f4'],
      [false, 'i1'],
    ]);
    expect(r.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as DbError).code))).toEqual([30n, 5n, 31n, 77n, ErrorCode.TXN_CONFLICT]);
    expect(resent).toEqual(['f3']);
  });

  it('coalescer: fast-path commits of many rows are split so no request carries more than COALESCED_TXN_OPS_MAX row ops', async () => {
    const { invoker, sent } = scripted((req) => ({ propagatedHt: 9n, writeHt: 5n, results: Array.from({ length: 1 + (req.more?.length ?? 0) }, () => ({ writeHt: 5n })) }));
    const c = new TxnWriteCoalescer(invoker);
    const d = new Deadline(1000);
    const alone = () => Promise.reject(new Error('not expected'));
    const rowsOf = (n: number, k: number) => Array.from({ length: n }, (_, i) => ({ type: 'UPSERT', key: { hashComponents: [{ int64: BigInt(k * 10_000 + i) }] } })) as never;
    await Promise.all(Array.from({ length: 25 }, (_, i) => c.write('t', 'A', 0, rowsOf(1000, i), txn(`m${i}`), d, alone, true)));
    const opsPerRequest = sent.map((r) => [r, ...(r.more ?? [])].reduce((n, w) => n + (w.ops?.length ?? 0), 0));
    expect(opsPerRequest).toEqual([COALESCED_TXN_OPS_MAX, COALESCED_TXN_OPS_MAX, 5000]);
  });
});
