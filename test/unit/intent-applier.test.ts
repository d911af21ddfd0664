/**
 * IntentApplier's worker (tserver/tablet/intent-applier.ts) on a real DocDb over the in-memory engine:
 * an apply queued in the same microtask drain in which the worker found its queue empty and ended
 * still gets applied. The tablet simulator found applies that never finished on a replica catching
 * up (TABLET_SIM_STRICT_APPLIES, docs/architecture.md "Simulation"): the worker was marked ended
 * only in a `.finally` of its promise, one microtask late, and an apply queued in between waited
 * for a worker that no longer ran.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../common/clock';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import type { TxnId } from '../../common/ids';
import type { DocDb } from '../../docdb/doc-db';
import type { ApplyItem } from '../../docdb/doc-db-api';
import { ApplyLagLog } from '../../tserver/tablet/apply-lag-log';
import { IntentApplier } from '../../tserver/tablet/intent-applier';
import { TxnParticipant } from '../../tserver/tablet/participant/txn-participant';
import { ht, key, memoryDocDb, op, txnMeta } from './docdb-helpers';

let applier: IntentApplier | undefined;
afterEach(async () => {
  await applier?.cancelDeferredFlush();
  applier = undefined;
});

/** Two committed transactions, each with one intent and a durable apply-pending mark. */
async function twoPending(db: DocDb): Promise<[ApplyItem, ApplyItem]> {
  const items = [1, 2].map((n): ApplyItem => ({ txnId: txnMeta(`t${n}`).txnId, commitHt: ht(100 + n), opId: op(10 + n) }));
  for (const [n, a] of items.entries()) {
    await db.writeIntentsMany([{ txn: txnMeta(a.txnId, ht(50)), ops: [{ type: 'upsert', key: key(n), columns: [{ columnId: 1, value: BigInt(n + 1) }] }], ht: ht(60 + n), opId: op(1 + n) }]);
  }
  const marks = await db.writeRegularMany([], items, false);
  expect(marks).toEqual(['pending', 'pending']);
  return [items[0]!, items[1]!];
}

/** Until `txnId`'s apply no longer runs, at most `turns` event-loop turns (a condition, not a duration). */
async function untilApplied(a: IntentApplier, txnId: TxnId, turns: number): Promise<boolean> {
  for (let i = 0; i < turns && a.inProgress(txnId); i++) await new Promise((r) => setImmediate(r));
  return a.inProgress(txnId) === undefined;
}

describe('IntentApplier worker', () => {
  it('an apply queued right as the worker ends (same microtask drain) is applied, its intents moved', async () => {
    const db = await memoryDocDb();
    const [a1, a2] = await twoPending(db);
    const clock = new HybridClock(new SystemClock());
    const participant = new TxnParticipant({ tabletId: 'ia', clock, db: () => db });
    // a2 is started while a1's apply is being noted (its lag recorded): in the continuation that the
    // worker's last group released, after the worker found its queue empty and returned, before a
    // `.finally` on its promise would run — as an ordered batch's continuation in that drain can.
    let secondStarted = false;
    const lag = new (class extends ApplyLagLog {
      override record(...args: Parameters<ApplyLagLog['record']>): ReturnType<ApplyLagLog['record']> {
        if (args[0] === a1.txnId) {
          applier!.start(a2);
          secondStarted = true;
        }
        return super.record(...args);
      }
    })();
    applier = new IntentApplier({ flags: new Flags(), clock, db: () => db, running: () => true, participant, applyLag: lag, delayMs: () => 0, failReplica: (why) => expect.fail(why) });
    applier.start(a1);
    await applier.inProgress(a1.txnId);
    expect(secondStarted).toBe(true);
    expect(await untilApplied(applier, a2.txnId, 1_000)).toBe(true);
    expect(participant.localOutcome(a2.txnId)).toBeUndefined(); // the apply ended: no pending apply left
    for (const [n, a] of [a1, a2].entries()) {
      const row = await db.getRow(key(n), { readHt: ht(1_000), resolveStatus: () => Promise.resolve({ status: 'PENDING' }) });
      expect(row?.columns.get(1), `${a.txnId}'s row in RegularDB`).toBe(BigInt(n + 1));
    }
  });
});
