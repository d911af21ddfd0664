/**
 * Lock: row locks with short leases under the nemeses (docs/rows.md). A process takes the lock of one
 * of a few rows (ROW_LOCKED: a definite fail), appends two "token:step," entries to the row's log,
 * each carrying the lock (a pause or partition that outlives the lease makes the second one FENCED),
 * and unlocks; now and then a holder stalls past its lease before its second append. The checker (lock-checker.ts) reads the final logs: no two holders' writes interleave
 * (tokens never go down), every acknowledged append is there once.
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { RowLock } from '../../client/row-ops';
import type { HistoryOp, HistoryRecorder } from './history';
import { checkLocks, lockEntry } from './lock-checker';
import { FINAL_READ_ATTEMPTS_MAX, FINAL_READ_TIMEOUT_MS } from './set-workload';
import { completionOfError, errorText, retryBounded, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const LOCK_TABLE = 'verify_lock';
/** Rows whose locks the processes contend for. */
export const LOCK_ROWS = 3;
/** Lease of each lock: a fault longer than this ends it under its holder. */
export const LOCK_LEASE_MS = 1500;
/** Appends per lock held. */
const STEPS = 2;
/**
 * One holder in this many stalls past its lease before its second append (Kleppmann's paused lock
 * holder): that append must be FENCED, and the checker must never find it in the log.
 */
const STALL_ONE_IN = 8;

export class LockWorkload implements Workload {
  readonly name = 'lock';

  constructor(readonly table: string = LOCK_TABLE) {}

  async setup(client: TesseraClient): Promise<void> {
    await client.createTable({ name: this.table, columns: [{ name: 'id', type: 'int64' }, { name: 'log', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
  }

  /** One lock cycle: lock, STEPS appends, unlock; each recorded as its own operation. */
  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const id = ctx.rng.int(LOCK_ROWS);
    const key = { id: BigInt(id) };
    const t = ctx.client.table(this.table);
    const o = { timeoutMs: ctx.opTimeoutMs };
    let lock: RowLock;
    const inv = ctx.recorder.invoke(ctx.process, 'lock', null, String(id));
    try {
      lock = await t.lockRow(key, { ...o, leaseMs: LOCK_LEASE_MS });
      ctx.recorder.complete(inv, 'ok', Number(lock.token));
    } catch (e) {
      // A lock of unknown outcome holds nothing this process can use: its lease frees it.
      const type = completionOfError(e, true);
      ctx.recorder.complete(inv, type, null, errorText(e));
      return type;
    }
    for (let s = 0; s < STEPS; s++) {
      if (s > 0 && ctx.rng.int(STALL_ONE_IN) === 0) await new Promise((r) => setTimeout(r, LOCK_LEASE_MS + 300));
      const entry = lockEntry(lock.token, s);
      const w = ctx.recorder.invoke(ctx.process, 'write', entry, String(id));
      try {
        await t.append(key, { log: `${entry},` }, { ...o, lock });
        ctx.recorder.complete(w, 'ok', entry);
      } catch (e) {
        const type = completionOfError(e, false) === 'fail' || isRefused(e) ? 'fail' : 'info';
        ctx.recorder.complete(w, type, entry, errorText(e));
        return type;
      }
    }
    const u = ctx.recorder.invoke(ctx.process, 'unlock', Number(lock.token), String(id));
    try {
      await t.unlockRow(lock, o);
      ctx.recorder.complete(u, 'ok', Number(lock.token));
      return 'ok';
    } catch (e) {
      ctx.recorder.complete(u, 'fail', Number(lock.token), errorText(e));
      return 'fail';
    }
  }

  async final(client: TesseraClient, recorder: HistoryRecorder, process: number): Promise<void> {
    for (let id = 0; id < LOCK_ROWS; id++) {
      const inv = recorder.invoke(process, 'final-read', null, String(id));
      try {
        const row = await retryBounded(() => client.table(this.table).get({ id: BigInt(id) }, { timeoutMs: FINAL_READ_TIMEOUT_MS }), FINAL_READ_ATTEMPTS_MAX, 500);
        recorder.complete(inv, 'ok', (row?.['log'] as string | null | undefined) ?? '');
      } catch (e) {
        recorder.complete(inv, 'fail', null, errorText(e));
      }
    }
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkLocks(history);
    return {
      valid: r.valid,
      anomalies: r.anomalies,
      lostWrites: r.lost,
      details: [`locks granted ${r.grants}, appends acknowledged ${r.okWrites}, refused (ROW_LOCKED / FENCED) ${r.refused}, final reads ${r.finalReads}`, ...r.details],
      ...(r.okWrites === 0 ? { vacuous: 'no append under a lock was acknowledged' } : {}),
    };
  }
}

/** FENCED and ROW_LOCKED are answered before anything is written: definite failures. */
function isRefused(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return code === 'FENCED' || code === 'ROW_LOCKED';
}
