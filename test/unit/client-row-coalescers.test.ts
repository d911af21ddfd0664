/**
 * The client's coalescing of row operations and row-lock calls (client/row-ops-coalescer.ts,
 * client/row-lock-coalescer.ts) against a scripted tablet invoker: one request per tablet per turn,
 * outcomes matched to calls in order (an error keeps its details), retryable per-call codes resent
 * alone with the call's own request id, a server that ignores `more` handled, request failures shared.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { LockRowRequestPB, MutateRowsRequestPB, MutateRowsResponsePB, RowLockRequestPB, RowLockResponsePB } from '../../rpc/row-methods';
import { Deadline } from '../../client/retry-policy';
import type { TabletInvoker } from '../../client/tablet-invoker';
import { RequestIds } from '../../client/request-ids';
import { COALESCED_ROW_CALLS_MAX, HELD_GROUP_ROWS_MAX, ROW_REQUESTS_ALONE_INFLIGHT, ROW_REQUESTS_INFLIGHT_MAX, RowOpsCoalescer, type RowCallAnswer } from '../../client/row-ops-coalescer';
import { RowLockCoalescer } from '../../client/row-lock-coalescer';
import { HELD_GROUP_MS_MAX, TurnBatches } from '../../client/turn-batches';
import { sameRow } from '../../client/row-ops';
import { TableSchema } from '../../client/table-schema';

type Req = MutateRowsRequestPB | LockRowRequestPB | RowLockRequestPB;

function scripted<R>(answer: (req: Req, method: string) => R | Promise<R>): { invoker: TabletInvoker; sent: Array<{ method: string; req: Req; idempotent: boolean }> } {
  const sent: Array<{ method: string; req: Req; idempotent: boolean }> = [];
  const invoker = {
    propagatedHt: 7n,
    observeHt: () => undefined,
    requests: new RequestIds(),
    call: async (_table: string, _where: unknown, m: { method: string }, makeReq: (t: { tabletId: string }) => Req, _d: unknown, idempotent: boolean) => {
      const req = makeReq({ tabletId: 'T' });
      sent.push({ method: m.method, req, idempotent });
      return answer(req, m.method);
    },
  } as unknown as TabletInvoker;
  return { invoker, sent };
}

const row = (k: number) => [{ key: { hashComponents: [{ int64: BigInt(k) }] }, mutations: [{ type: 'INCREMENT', columnId: 1, by: 1n }] }] as never;
const route = { hash: 1, key: new Uint8Array() } as never;
const itemsOk = (n: number): MutateRowsResponsePB => ({ propagatedHt: 9n, items: Array.from({ length: n }, (_, i) => ({ applied: true, writeHt: BigInt(10 + i), results: [] })) });
const none = (): Promise<RowCallAnswer> => Promise.reject(new Error('not expected'));
const noSet: ReadonlySet<string> = new Set();

describe('RowOpsCoalescer', () => {
  it('row coalescer: calls of one turn to one tablet go in one request, in order, each with its own request id; other tablets get their own', async () => {
    const { invoker, sent } = scripted((req) => ('more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] }));
    const c = new RowOpsCoalescer(invoker, noSet, noSet, 0);
    const d = new Deadline(1000);
    const answers = await Promise.all([1, 2, 3].map((k) => c.call('t', 'A', route, 0, row(k), d, none)).concat([c.call('t', 'B', route, 0, row(4), d, none)]));
    expect(answers.every((a) => a.applied === true)).toBe(true);
    const [a, b] = sent.map((s) => s.req as MutateRowsRequestPB);
    expect(sent.map((s) => s.req.tabletId)).toEqual(['T', 'T']);
    expect(a!.more?.length).toBe(2);
    expect(b!.more).toBeUndefined(); // a lone call is a plain single request
    const ids = [a!.requestId, ...a!.more!.map((m) => m.requestId)];
    expect(new Set(ids.map(String)).size).toBe(3);
    expect(a!.clientId).toBe(invoker.requests.clientId);
    expect(sent.every((s) => s.idempotent)).toBe(true);
    expect(c.stats).toEqual({ requests: 2, calls: 4 });
  });

  it('row coalescer: each call keeps its own outcome — an error with its details, a retryable code resent alone with the same request id', async () => {
    const { invoker, sent } = scripted(() => ({
      propagatedHt: 9n,
      items: [
        { applied: true, writeHt: 5n, results: [] },
        { code: ErrorCode.ROW_LOCKED, message: 'locked', detailsJson: JSON.stringify({ token: 42, holder: 'h' }) },
        { code: ErrorCode.NOT_THE_LEADER, message: 'moved' },
        { applied: false, writeHt: 0n, results: [] },
      ],
    }));
    const c = new RowOpsCoalescer(invoker, noSet, noSet, 0);
    const d = new Deadline(1000);
    const resent: number[] = [];
    const p = [1, 2, 3, 4].map((k) =>
      c.call('t', 'A', route, 0, row(k), d, (id) => {
        resent.push(id);
        return Promise.resolve({ applied: true, results: [] });
      }).catch((e: unknown) => e),
    );
    const [r1, r2, r3, r4] = await Promise.all(p);
    expect((r1 as RowCallAnswer).applied).toBe(true);
    expect(r2).toBeInstanceOf(DbError);
    expect((r2 as DbError).code).toBe(ErrorCode.ROW_LOCKED);
    expect((r2 as DbError).details).toEqual({ token: 42, holder: 'h' });
    expect((r3 as RowCallAnswer).applied).toBe(true); // resent alone
    expect((r4 as RowCallAnswer).applied).toBe(false);
    const req = sent[0]!.req as MutateRowsRequestPB;
    expect(resent).toEqual([Number(req.more![1]!.requestId)]);
  });

  it('row coalescer: a server without `more` did the first call only (the rest go alone); a request failure is every call\'s', async () => {
    const old = scripted(() => ({ applied: true, writeHt: 3n, results: [] }));
    const c = new RowOpsCoalescer(old.invoker, noSet, noSet, 0);
    const d = new Deadline(1000);
    let alone = 0;
    const resend = (): Promise<RowCallAnswer> => {
      alone++;
      return Promise.resolve({ applied: true, results: [] });
    };
    await Promise.all([1, 2, 3].map((k) => c.call('t', 'A', route, 0, row(k), d, resend)));
    expect(alone).toBe(2);

    const down = scripted(() => Promise.reject(new DbError(ErrorCode.TIMED_OUT, 'no answer')));
    const c2 = new RowOpsCoalescer(down.invoker, noSet, noSet, 0);
    const codes = await Promise.all([1, 2].map((k) => c2.call('t', 'A', route, 0, row(k), d, none).then(() => 'OK', (e: unknown) => DbError.from(e).code)));
    expect(codes).toEqual([ErrorCode.TIMED_OUT, ErrorCode.TIMED_OUT]);
  });

  it('row coalescer: at most COALESCED_ROW_CALLS_MAX calls per request', async () => {
    const { invoker, sent } = scripted((req) => ('more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] }));
    const c = new RowOpsCoalescer(invoker, noSet, noSet, 0);
    const d = new Deadline(1000);
    await Promise.all(Array.from({ length: COALESCED_ROW_CALLS_MAX + 5 }, (_, k) => c.call('t', 'A', route, 0, row(k), d, none)));
    expect(sent.map((s) => 1 + ((s.req as MutateRowsRequestPB).more?.length ?? 0))).toEqual([COALESCED_ROW_CALLS_MAX, 5]);
  });

  it('row coalescer (the default): per turn — nothing goes before the turn ends, then one request carries every call of the turn, also with nothing in flight', async () => {
    expect(ROW_REQUESTS_ALONE_INFLIGHT).toBe(0);
    const { invoker, sent } = scripted((req) => ('more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] }));
    const c = new RowOpsCoalescer(invoker, noSet, noSet);
    const d = new Deadline(1000);
    const calls = Promise.all(Array.from({ length: 5 }, (_, k) => c.call('t', 'A', route, 0, row(k), d, none)));
    expect(sent.length).toBe(0);
    expect((await calls).every((a) => a.applied)).toBe(true);
    expect(sent.map((s) => 1 + ((s.req as MutateRowsRequestPB).more?.length ?? 0))).toEqual([5]);
    const lone = c.call('t', 'A', route, 0, row(9), d, none);
    expect(sent.length).toBe(1);
    expect((await lone).applied).toBe(true);
    expect(sent.length).toBe(2);
  });

  it('row coalescer (the default): while a request to a tablet is in flight its calls wait — issued over several turns they go in ONE request once it is answered; another tablet is not held', async () => {
    expect(ROW_REQUESTS_INFLIGHT_MAX).toBe(1);
    const gates: Array<() => void> = [];
    const { invoker, sent } = scripted(async (req) => {
      await new Promise<void>((r) => gates.push(r));
      return 'more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] };
    });
    const c = new RowOpsCoalescer(invoker, noSet, noSet);
    const d = new Deadline(1000);
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    const first = c.call('t', 'A', route, 0, row(0), d, none);
    await turn();
    expect(sent.length).toBe(1);
    const later: Array<Promise<RowCallAnswer>> = [];
    for (let k = 1; k <= 3; k++) {
      later.push(c.call('t', 'A', route, 0, row(k), d, none));
      await turn();
    }
    const other = c.call('t', 'B', route, 0, row(9), d, none);
    await turn();
    // Tablet A's three calls wait for its request in flight; B's went at its turn's end.
    expect(sent.length).toBe(2);
    gates.shift()!(); // A's first request answered: the held calls go together
    expect((await first).applied).toBe(true);
    await turn();
    expect(sent.map((s) => 1 + ((s.req as MutateRowsRequestPB).more?.length ?? 0))).toEqual([1, 1, 3]);
    while (gates.length > 0) gates.shift()!();
    expect((await Promise.all([...later, other])).every((a) => a.applied)).toBe(true);
    expect(c.stats).toEqual({ requests: 3, calls: 5 });
  });

  it('row coalescer (the default): a group of HELD_GROUP_ROWS_MAX rows or more is not held behind the request in flight (two big requests pipeline)', async () => {
    const gates: Array<() => void> = [];
    const { invoker, sent } = scripted(async (req) => {
      await new Promise<void>((r) => gates.push(r));
      return 'more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] };
    });
    const c = new RowOpsCoalescer(invoker, noSet, noSet);
    const d = new Deadline(1000);
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    const rowsOf = (n: number, at: number) => Array.from({ length: n }, (_, j) => row(at + j)[0]) as never;
    const big = (at: number) => c.call('t', 'A', route, 0, rowsOf(HELD_GROUP_ROWS_MAX / 2, at), d, none);
    const first = [big(0), big(100)];
    await turn();
    const second = [big(200), big(300)];
    const small = c.call('t', 'B', route, 0, row(1), d, none);
    await turn();
    expect(sent.map((s) => 1 + ((s.req as MutateRowsRequestPB).more?.length ?? 0))).toEqual([2, 2, 1]);
    while (gates.length > 0) gates.shift()!();
    expect((await Promise.all([...first, ...second, small])).every((a) => a.applied)).toBe(true);
  });

  it('row coalescer (adaptive, when asked): calls go alone at once while fewer than aloneInflight requests to the tablet are in flight, then share one request per turn; a tablet with none in flight sends alone again', async () => {
    const gates: Array<() => void> = [];
    const { invoker, sent } = scripted(async (req) => {
      await new Promise<void>((r) => gates.push(r));
      return 'more' in req && req.more ? itemsOk(1 + req.more.length) : { applied: true, writeHt: 3n, results: [] };
    });
    const ROW_REQUESTS_ALONE_INFLIGHT = 8;
    const c = new RowOpsCoalescer(invoker, noSet, noSet, ROW_REQUESTS_ALONE_INFLIGHT, 0);
    const d = new Deadline(1000);
    const n = ROW_REQUESTS_ALONE_INFLIGHT + 3;
    const first = Promise.all(Array.from({ length: n }, (_, k) => c.call('t', 'A', route, 0, row(k), d, none)));
    // Sent at once (before the turn ends): the lone calls.
    expect(sent.length).toBe(ROW_REQUESTS_ALONE_INFLIGHT);
    await new Promise((r) => setImmediate(r));
    expect(sent.map((s) => 1 + ((s.req as MutateRowsRequestPB).more?.length ?? 0))).toEqual([...Array.from({ length: ROW_REQUESTS_ALONE_INFLIGHT }, () => 1), 3]);
    while (gates.length > 0) gates.shift()!();
    expect((await first).every((a) => a.applied)).toBe(true);
    // Nothing in flight any more: the next call goes alone, at once.
    const again = c.call('t', 'A', route, 0, row(99), d, none);
    expect(sent.length).toBe(ROW_REQUESTS_ALONE_INFLIGHT + 2);
    gates.shift()!();
    expect((await again).applied).toBe(true);
  });
});

describe('TurnBatches', () => {
  it('turn batches: a held group takes later additions and goes on wake once no longer held — or after heldMsMax even if never woken (a stalled request in flight holds nobody past it)', async () => {
    expect(HELD_GROUP_MS_MAX).toBeGreaterThan(0);
    const sent: string[][] = [];
    let busy = true;
    const b = new TurnBatches<string[]>((p) => sent.push(p), () => busy, 30);
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    b.add('k', ['a']);
    await turn();
    expect(sent).toEqual([]);
    b.get('k')!.push('b'); // joins the held group
    busy = false;
    b.wake();
    await turn();
    expect(sent).toEqual([['a', 'b']]);
    busy = true; // held for good, never woken: only the bound sends it
    b.add('k', ['c']);
    await turn();
    expect(sent.length).toBe(1);
    for (let i = 0; i < 400 && sent.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(sent).toEqual([['a', 'b'], ['c']]);
  });
});

describe('RowLockCoalescer', () => {
  it('lock coalescer: lockRow calls share a LockRow request (resendable), renew/unlock a RowLock one (not resent); outcomes in order', async () => {
    const { invoker, sent } = scripted((req, method): RowLockResponsePB => {
      const n = 1 + (req.more?.length ?? 0);
      if (method === 'LockRow') return { propagatedHt: 9n, items: Array.from({ length: n }, (_, i) => (i === 1 ? { code: ErrorCode.ROW_LOCKED, message: 'locked', detailsJson: '{"token":3}' } : { lockId: `L${i}`, token: BigInt(100 + i), expiresHt: 5n, leaseMs: 1000 })) };
      return { propagatedHt: 9n, items: Array.from({ length: n }, (_, i) => ({ lockId: `U${i}`, token: 1n, expiresHt: 5n, leaseMs: 0 })) };
    });
    const c = new RowLockCoalescer(invoker, 't', 0);
    const d = new Deadline(1000);
    const key = {} as never; // the coalescer passes keys through untouched
    const alone = (): Promise<RowLockResponsePB> => Promise.reject(new Error('not expected'));
    const locks = Array.from({ length: 3 }, (_, i) => c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: `id${i}` }, d, alone).catch((e: unknown) => DbError.from(e)));
    const unlocks = Array.from({ length: 2 }, (_, i) => c.held('A', route, 0, { key, lockId: `id${i}`, action: 'UNLOCK', leaseMs: 0 }, d, alone));
    const [l0, l1, l2] = await Promise.all(locks);
    expect((l0 as RowLockResponsePB).token).toBe(100n);
    expect((l1 as DbError).code).toBe(ErrorCode.ROW_LOCKED);
    expect((l1 as DbError).details['token']).toBe(3);
    expect((l2 as RowLockResponsePB).lockId).toBe('L2');
    expect((await Promise.all(unlocks)).map((u) => u.lockId)).toEqual(['U0', 'U1']);
    expect(sent.map((s) => [s.method, 1 + (s.req.more?.length ?? 0), s.idempotent])).toEqual([
      ['LockRow', 3, true],
      ['RowLock', 2, false],
    ]);
    expect((sent[0]!.req as LockRowRequestPB).more!.map((m) => m.lockId)).toEqual(['id1', 'id2']);
    expect(c.stats).toEqual({ requests: 2, calls: 5 });
  });

  it('lock coalescer (the default): per turn — lock and unlock calls of one turn go in one LockRow and one RowLock request, none before the turn ends', async () => {
    const { invoker, sent } = scripted((req, method): RowLockResponsePB => {
      const n = 1 + (req.more?.length ?? 0);
      const one = { lockId: method === 'LockRow' ? 'L' : 'U', token: 1n, expiresHt: 5n, leaseMs: 1000 };
      return n === 1 ? { ...one, propagatedHt: 9n } : { propagatedHt: 9n, items: Array.from({ length: n }, () => one) };
    });
    const c = new RowLockCoalescer(invoker, 't');
    const d = new Deadline(1000);
    const key = {} as never;
    const alone = (): Promise<RowLockResponsePB> => Promise.reject(new Error('not expected'));
    const locks = Array.from({ length: 3 }, (_, i) => c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: `id${i}` }, d, alone));
    const unlocks = Array.from({ length: 2 }, (_, i) => c.held('A', route, 0, { key, lockId: `id${i}`, action: 'UNLOCK', leaseMs: 0 }, d, alone));
    expect(sent.length).toBe(0);
    expect((await Promise.all(locks)).map((l) => l.lockId)).toEqual(['L', 'L', 'L']);
    expect((await Promise.all(unlocks)).map((l) => l.lockId)).toEqual(['U', 'U']);
    expect(sent.map((s) => [s.method, 1 + (s.req.more?.length ?? 0)])).toEqual([
      ['LockRow', 3],
      ['RowLock', 2],
    ]);
  });

  it('lock coalescer (the default): a second lockRow to a tablet waits for the one in flight, an unlock does not (bounded per kind); held calls go together once it is answered', async () => {
    const gates: Array<() => void> = [];
    const { invoker, sent } = scripted(async (req, method): Promise<RowLockResponsePB> => {
      await new Promise<void>((r) => gates.push(r));
      const n = 1 + (req.more?.length ?? 0);
      const one = { lockId: method === 'LockRow' ? 'L' : 'U', token: 1n, expiresHt: 5n, leaseMs: 1000 };
      return n === 1 ? { ...one, propagatedHt: 9n } : { propagatedHt: 9n, items: Array.from({ length: n }, () => one) };
    });
    const c = new RowLockCoalescer(invoker, 't');
    const d = new Deadline(1000);
    const key = {} as never;
    const alone = (): Promise<RowLockResponsePB> => Promise.reject(new Error('not expected'));
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    const l0 = c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'id0' }, d, alone);
    await turn();
    const l1 = c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'id1' }, d, alone);
    await turn();
    const l2 = c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'id2' }, d, alone);
    const u = c.held('A', route, 0, { key, lockId: 'id9', action: 'UNLOCK', leaseMs: 0 }, d, alone);
    await turn();
    expect(sent.map((s) => [s.method, 1 + (s.req.more?.length ?? 0)])).toEqual([
      ['LockRow', 1],
      ['RowLock', 1],
    ]);
    gates.shift()!();
    expect((await l0).lockId).toBe('L');
    await turn();
    expect(sent.map((s) => [s.method, 1 + (s.req.more?.length ?? 0)])).toEqual([
      ['LockRow', 1],
      ['RowLock', 1],
      ['LockRow', 2],
    ]);
    while (gates.length > 0) gates.shift()!();
    expect((await Promise.all([l1, l2, u])).map((x) => x.lockId)).toEqual(['L', 'L', 'U']);
  });

  it('lock coalescer (adaptive, when asked): lock calls go alone at once while fewer than aloneInflight lock requests to the tablet are in flight, then share one request per turn; unlocks count too', async () => {
    const LOCK_REQUESTS_ALONE_INFLIGHT = 8;
    const gates: Array<() => void> = [];
    const { invoker, sent } = scripted(async (req): Promise<RowLockResponsePB> => {
      await new Promise<void>((r) => gates.push(r));
      const n = 1 + (req.more?.length ?? 0);
      return n === 1 ? { lockId: 'L', token: 1n, expiresHt: 5n, leaseMs: 1000, propagatedHt: 9n } : { propagatedHt: 9n, items: Array.from({ length: n }, () => ({ lockId: 'L', token: 1n, expiresHt: 5n, leaseMs: 1000 })) };
    });
    const c = new RowLockCoalescer(invoker, 't', LOCK_REQUESTS_ALONE_INFLIGHT, 0);
    const d = new Deadline(1000);
    const key = {} as never;
    const alone = (): Promise<RowLockResponsePB> => Promise.reject(new Error('not expected'));
    const n = LOCK_REQUESTS_ALONE_INFLIGHT + 2;
    const locks = Array.from({ length: n - 1 }, (_, i) => c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: `id${i}` }, d, alone));
    const unlock = c.held('A', route, 0, { key, lockId: 'id0', action: 'UNLOCK', leaseMs: 0 }, d, alone);
    // Sent at once (before the turn ends): the lone calls, up to the in-flight bound.
    expect(sent.length).toBe(LOCK_REQUESTS_ALONE_INFLIGHT);
    expect(sent.every((s) => s.req.more === undefined)).toBe(true);
    await new Promise((r) => setImmediate(r));
    // The rest at the turn's end: one LockRow carrying the remaining lock, one RowLock the unlock.
    expect(sent.slice(LOCK_REQUESTS_ALONE_INFLIGHT).map((s) => [s.method, 1 + (s.req.more?.length ?? 0)])).toEqual([
      ['LockRow', 1],
      ['RowLock', 1],
    ]);
    while (gates.length > 0) gates.shift()!();
    expect((await Promise.all(locks)).every((l) => l.lockId === 'L')).toBe(true);
    await unlock;
    // Nothing in flight: the next call goes alone, at once.
    const again = c.lock('A', route, 0, { key, leaseMs: 1000, holder: 'h', lockId: 'x' }, d, alone);
    expect(sent.length).toBe(LOCK_REQUESTS_ALONE_INFLIGHT + 3);
    gates.shift()!();
    expect((await again).token).toBe(1n);
    expect(c.stats).toEqual({ requests: LOCK_REQUESTS_ALONE_INFLIGHT + 3, calls: n + 1 });
  });
});

describe('RowOps helpers', () => {
  it('row ops: a call\'s lock goes with the row it locks — sameRow tells rows apart by hash and encoded key (hash and range columns, strings, equal hashes)', () => {
    const s = new TableSchema('t-id', 't', {
      schema: {
        columns: [
          { name: 'id', id: 0, type: 'int64', nullable: false },
          { name: 'k', id: 1, type: 'string', nullable: false },
          { name: 'n', id: 2, type: 'int64', nullable: true },
        ],
        hashColumns: ['id'],
        rangeColumns: ['k'],
      },
      schemaVersion: 0,
    });
    const k = (id: bigint, key: string) => s.key({ id, k: key });
    expect(sameRow(k(1n, 'a'), k(1n, 'a'))).toBe(true);
    expect(sameRow(k(1n, 'a'), k(1n, 'b'))).toBe(false); // same hash, other range key
    expect(sameRow(k(1n, 'a'), k(2n, 'a'))).toBe(false);
    expect(sameRow(k(1n, ''), k(1n, 'a'))).toBe(false);
    // A forged equal hash with other hash columns is still another row.
    const a = k(1n, 'a');
    expect(sameRow(a, { ...k(2n, 'a'), hash: a.hash })).toBe(false);
  });
});
