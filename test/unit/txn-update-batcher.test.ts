/**
 * The coordinator's UpdateTransaction batching (tserver/transaction/update-batcher.ts): updates queued
 * in one cascade of promise continuations share one request; at most `inFlightMax` requests per
 * tablet; what queues behind them goes together next; per-update errors reach only their caller.
 */
import { describe, expect, it } from 'vitest';
import { UpdateBatcher, type TxnUpdate } from '../../tserver/transaction/update-batcher';
import type { TxnId } from '../../common/ids';

const u = (n: number): TxnUpdate => ({ txnId: `t${n}` as unknown as TxnId, type: 'APPLY', commitHt: BigInt(n) });

/** A fake participant: records each request; answers when release() is called. */
function fake(fail: (u: TxnUpdate) => Error | undefined = () => undefined) {
  const requests: Array<{ tabletId: string; ids: string[]; release: () => void }> = [];
  const send = (tabletId: string, batch: readonly TxnUpdate[]): Promise<Array<Error | undefined>> =>
    new Promise((resolve) => requests.push({ tabletId, ids: batch.map((x) => String(x.txnId)), release: () => resolve(batch.map(fail)) }));
  return { requests, send };
}

const ticks = async (n = 3): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('txn update batcher', () => {
  it('updates queued in one cascade of continuations (commits completing together) go in ONE request per tablet', async () => {
    const f = fake();
    const b = new UpdateBatcher(f.send, 4, 256);
    // Each commit resumes in its own continuation, several awaits deep, like TransactionCoordinator.commit → drive.
    const commits = Array.from({ length: 10 }, (_, i) => Promise.resolve().then(async () => {
      await Promise.resolve();
      await Promise.resolve();
      return Promise.all([b.update('A', u(i), 1000), b.update('B', u(i), 1000)]);
    }));
    await ticks();
    expect(f.requests.map((r) => [r.tabletId, r.ids.length])).toEqual([['A', 10], ['B', 10]]);
    for (const r of f.requests) r.release();
    await Promise.all(commits);
    expect(b.tabletsBusy).toBe(0);
  });

  it('at most inFlightMax requests per tablet; what queues meanwhile goes together, split at perRequestMax', async () => {
    const f = fake();
    const b = new UpdateBatcher(f.send, 2, 3);
    const done: Array<Promise<void>> = [];
    done.push(b.update('A', u(0), 1000));
    await ticks();
    done.push(b.update('A', u(1), 1000));
    await ticks();
    expect(f.requests.map((r) => r.ids)).toEqual([['t0'], ['t1']]); // two in flight, each started alone
    for (let i = 2; i < 9; i++) done.push(b.update('A', u(i), 1000));
    await ticks();
    expect(f.requests).toHaveLength(2); // both senders busy: the 7 wait
    f.requests[0]!.release();
    await ticks();
    expect(f.requests[2]!.ids).toEqual(['t2', 't3', 't4']); // the freed sender takes the next perRequestMax
    f.requests[1]!.release();
    await ticks();
    expect(f.requests[3]!.ids).toEqual(['t5', 't6', 't7']);
    f.requests[2]!.release();
    await ticks();
    expect(f.requests[4]!.ids).toEqual(['t8']);
    f.requests[3]!.release();
    f.requests[4]!.release();
    await Promise.all(done);
    expect(f.requests).toHaveLength(5);
    expect(b.tabletsBusy).toBe(0);
  });

  it('a failed update rejects only its own caller; a failed request rejects all of its updates', async () => {
    const f = fake((x) => (x.txnId === ('t1' as unknown as TxnId) ? new Error('TABLET_NOT_FOUND') : undefined));
    const b = new UpdateBatcher(f.send, 4, 256);
    const ok = b.update('A', u(0), 1000);
    const bad = b.update('A', u(1), 1000);
    await ticks();
    f.requests[0]!.release();
    await expect(ok).resolves.toBeUndefined();
    await expect(bad).rejects.toThrow('TABLET_NOT_FOUND');

    const broken = new UpdateBatcher(() => Promise.reject(new Error('NETWORK_ERROR')), 4, 256);
    const all = [broken.update('A', u(2), 1000), broken.update('A', u(3), 1000)];
    for (const p of all) await expect(p).rejects.toThrow('NETWORK_ERROR');
    expect(broken.tabletsBusy).toBe(0);
  });
});
