/**
 * Coalesced CreateTransaction / CommitTransaction calls (client/status-call-coalescer.ts) against a
 * scripted status tablet proxy: one request per status tablet per turn, a lone call through its own
 * single path, results matched in order, retryable results resent alone, an old server handled,
 * request failures shared.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { CommitTransactionRequestPB, CreateTransactionRequestPB } from '../../rpc/service-methods';
import { Deadline } from '../../client/retry-policy';
import type { StatusTabletProxy } from '../../client/status-tablet-proxy';
import { COALESCED_STATUS_CALLS_MAX, StatusCallCoalescer } from '../../client/status-call-coalescer';

type Req = CreateTransactionRequestPB | CommitTransactionRequestPB;

function scripted(answer: (method: string, req: Req) => unknown): { proxy: StatusTabletProxy; sent: Array<{ method: string; req: Req }> } {
  const sent: Array<{ method: string; req: Req }> = [];
  const proxy = {
    call: async (_tablet: string, m: { method: string }, req: Req) => {
      sent.push({ method: m.method, req });
      return answer(m.method, req);
    },
  } as unknown as StatusTabletProxy;
  return { proxy, sent };
}

const d = () => new Deadline(1000);
const never = () => Promise.reject(new Error('not expected'));

describe('StatusCallCoalescer', () => {
  it('status calls: creates of one turn share a request per status tablet; a lone one takes its own path', async () => {
    const { proxy, sent } = scripted((_m, req) => ({ propagatedHt: 50n, results: [req, ...((req as CreateTransactionRequestPB).more ?? [])].map((_, k) => ({ readHt: 10n + BigInt(k), globalLimitHt: 20n })) }));
    const c = new StatusCallCoalescer(proxy, () => 3n);
    const lone = { readHt: 99n, globalLimitHt: 0n, propagatedHt: 0n };
    const out = await Promise.all([
      c.create('s1', { txnId: 'a', isolation: 'snapshot', priority: 0.1 }, d(), never),
      c.create('s1', { txnId: 'b', isolation: 'snapshot', priority: 0.2 }, d(), never),
      c.create('s2', { txnId: 'c', isolation: 'snapshot', priority: 0.3 }, d(), () => Promise.resolve(lone)),
    ]);
    expect(out).toEqual([
      { readHt: 10n, globalLimitHt: 20n, propagatedHt: 50n },
      { readHt: 11n, globalLimitHt: 20n, propagatedHt: 50n },
      lone,
    ]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.req).toMatchObject({ statusTablet: 's1', txnId: 'a', priority: 0.1, propagatedHt: 3n, more: [{ txnId: 'b', isolation: 'snapshot', priority: 0.2 }] });
    expect(c.stats.creates).toEqual({ requests: 2, calls: 3 });
  });

  it('status calls: each commit gets its own result; a retryable one is resent alone, an abort is not', async () => {
    const { proxy, sent } = scripted(() => ({ results: [{ commitHt: 7n }, { code: ErrorCode.NOT_THE_LEADER, message: 'moved' }, { code: ErrorCode.TXN_ABORTED, message: 'expired' }] }));
    const c = new StatusCallCoalescer(proxy, () => 0n);
    const resent: string[] = [];
    const alone = (id: string) => () => {
      resent.push(id);
      return Promise.resolve(8n);
    };
    const r = await Promise.allSettled(['a', 'b', 'c'].map((id) => c.commit('s', { txnId: id, participantTablets: [`t-${id}`] }, d(), alone(id))));
    expect(r.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as DbError).code))).toEqual([7n, 8n, ErrorCode.TXN_ABORTED]);
    expect(resent).toEqual(['b']);
    expect(sent[0]!.req).toMatchObject({ txnId: 'a', participantTablets: ['t-a'], more: [{ txnId: 'b', participantTablets: ['t-b'] }, { txnId: 'c', participantTablets: ['t-c'] }] });
  });

  it('status calls: a server without `more` answered the first only; the rest go alone', async () => {
    const { proxy } = scripted(() => ({ commitHt: 5n }));
    const c = new StatusCallCoalescer(proxy, () => 0n);
    const r = await Promise.all(['a', 'b'].map((id) => c.commit('s', { txnId: id }, d(), () => Promise.resolve(id === 'b' ? 6n : -1n))));
    expect(r).toEqual([5n, 6n]);
  });

  it('status calls: a failed request fails every call in it; a full request is sent at once', async () => {
    const { proxy, sent } = scripted(() => Promise.reject(new DbError(ErrorCode.TIMED_OUT, 'slow')));
    const c = new StatusCallCoalescer(proxy, () => 0n);
    const n = COALESCED_STATUS_CALLS_MAX + 2;
    const r = await Promise.allSettled(Array.from({ length: n }, (_, i) => c.commit('s', { txnId: `x${i}` }, d(), never)));
    expect(r.every((x) => x.status === 'rejected' && (x.reason as DbError).code === ErrorCode.TIMED_OUT)).toBe(true);
    expect(sent.map((s) => 1 + (s.req.more?.length ?? 0))).toEqual([COALESCED_STATUS_CALLS_MAX, 2]);
  });
});
