/**
 * A transaction's heartbeats when the servers are slow (docs/transactions.md, "Heartbeats under
 * load"): the next heartbeat goes out on time while earlier ones are unanswered (a bounded number),
 * and a status tablet leader that timed out on a connection it kept answering on stays the leader.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { connect, FakeCluster, waitFor } from './client-txn-fake';

const HEARTBEAT = 'TransactionCoordinatorService.HeartbeatTransaction';

describe('client transaction heartbeats under slow servers', () => {
  it('heartbeats: one still unanswered does not hold back the next; at most 3 are unanswered at once', async () => {
    const f = new FakeCluster();
    const c = await connect(f, 20_000);
    const release: Array<() => void> = [];
    f.on(HEARTBEAT, () => new Promise((resolve) => release.push(() => resolve({ status: 'PENDING' }))));
    const txn = await c.beginTransaction();
    await waitFor(() => f.count(HEARTBEAT) >= 3);
    // Several more periods pass with all three unanswered: no fourth goes out (the scenario is time passing).
    await new Promise((r) => setTimeout(r, 120));
    expect(f.count(HEARTBEAT)).toBe(3);
    // Answers come back: heartbeats flow again.
    f.on(HEARTBEAT, () => ({ status: 'PENDING' }));
    for (const r of release.splice(0)) r();
    await waitFor(() => f.count(HEARTBEAT) >= 5);
    await txn.commit();
  });

  it('heartbeats: a TIMED_OUT from a leader heard on its connection keeps it; one never heard from sends the next call elsewhere', async () => {
    for (const heard of [true, false]) {
      const f = new FakeCluster();
      const c = await connect(f, 20_000);
      const txn = await c.beginTransaction();
      await waitFor(() => f.count(HEARTBEAT) >= 1);
      let failed = false;
      f.on(HEARTBEAT, (_r, address) => {
        if (address === 'ts-b' && !failed) {
          failed = true;
          throw new DbError(ErrorCode.TIMED_OUT, 'slow', { address, heard });
        }
        return { status: 'PENDING' };
      });
      const from = f.calls.length;
      await waitFor(() => f.calls.slice(from).filter((x) => x.method === HEARTBEAT).length >= 3);
      const after = f.calls.slice(from).filter((x) => x.method === HEARTBEAT).map((x) => x.address);
      expect(after[0]).toBe('ts-b');
      // Kept: every later heartbeat straight to ts-b. Dropped: the next attempt asks another replica
      // (ts-a, which answers NOT_THE_LEADER with the hint back to ts-b).
      if (heard) expect(after.every((a) => a === 'ts-b')).toBe(true);
      else expect(after).toContain('ts-a');
      expect(txn.state).toBe('pending');
      await txn.commit();
    }
  });
});
