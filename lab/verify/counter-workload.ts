/**
 * Counter: `increment` (one Raft entry, answering the new value: docs/rows.md) of one of a few
 * rows' int64 cell by 1, and point reads; after the faults heal, a final read of every row. The
 * checker (counter-checker.ts) proves every acknowledged increment counted exactly once and none
 * invented. Increments are retryable requests: a copy resent after a lost answer must not add twice.
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { HistoryOp, HistoryRecorder } from './history';
import { checkCounter } from './counter-checker';
import { FINAL_READ_ATTEMPTS_MAX, FINAL_READ_TIMEOUT_MS } from './set-workload';
import { completionOfError, errorText, retryBounded, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const COUNTER_TABLE = 'verify_counter';
/** Counters (rows) the processes share: few, so increments of one row race. */
export const COUNTER_KEYS = 3;

export class CounterWorkload implements Workload {
  readonly name = 'counter';

  constructor(readonly table: string = COUNTER_TABLE) {}

  async setup(client: TesseraClient): Promise<void> {
    await client.createTable({ name: this.table, columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const id = ctx.rng.int(COUNTER_KEYS);
    const read = ctx.rng.int(4) === 0;
    const inv = ctx.recorder.invoke(ctx.process, read ? 'read' : 'add', read ? null : 1, String(id));
    try {
      const t = ctx.client.table(this.table);
      const v = read ? (((await t.get({ id: BigInt(id) }, { timeoutMs: ctx.opTimeoutMs }))?.['n'] as bigint | null | undefined) ?? 0n) : ((await t.increment({ id: BigInt(id) }, { n: 1 }, { timeoutMs: ctx.opTimeoutMs }))['n'] as bigint);
      ctx.recorder.complete(inv, 'ok', Number(v));
      return 'ok';
    } catch (e) {
      const type = completionOfError(e, read);
      ctx.recorder.complete(inv, type, null, errorText(e));
      return type;
    }
  }

  async final(client: TesseraClient, recorder: HistoryRecorder, process: number): Promise<void> {
    for (let id = 0; id < COUNTER_KEYS; id++) {
      const inv = recorder.invoke(process, 'final-read', null, String(id));
      try {
        const row = await retryBounded(() => client.table(this.table).get({ id: BigInt(id) }, { timeoutMs: FINAL_READ_TIMEOUT_MS }), FINAL_READ_ATTEMPTS_MAX, 500);
        recorder.complete(inv, 'ok', Number((row?.['n'] as bigint | null | undefined) ?? 0n));
      } catch (e) {
        recorder.complete(inv, 'fail', null, errorText(e));
      }
    }
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkCounter(history);
    const anomalies = { ...r.anomalies };
    if (r.finalReads < COUNTER_KEYS) anomalies['no-final-read'] = COUNTER_KEYS - r.finalReads;
    return {
      valid: r.valid && r.finalReads >= COUNTER_KEYS,
      anomalies,
      lostWrites: r.lost,
      details: [`increments acknowledged ${r.okAdds}, unknown outcome ${r.infoAdds}, reads ${r.reads}, final reads ${r.finalReads}`, ...r.details],
      ...(r.okAdds === 0 ? { vacuous: 'no increment was acknowledged' } : {}),
    };
  }
}
