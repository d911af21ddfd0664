/**
 * What a verification workload is: it creates its table, performs one operation at a time for a
 * logical process (recording invoke and completion in the history), does a final read once the
 * faults are healed, and judges the history with its checker.
 */
import { TRANSACTIONS_TABLE } from '../../common/system-tables';
import { DbError, ErrorCode } from '../../common/errors';
import type { Rng } from '../../common/rng';
import type { TesseraClient } from '../../client/tessera-client';
import type { HistoryOp, HistoryRecorder } from './history';

export interface WorkloadVerdict {
  valid: boolean;
  /** Anomaly name -> count (empty when valid). */
  anomalies: Record<string, number>;
  /** Acknowledged writes missing from the final state. */
  lostWrites: number;
  /** Short human lines for the report (first offending ops, checker figures). */
  details: string[];
  /** Set when the checker could not decide (search bound reached): the verdict is 'unknown', not valid. */
  inconclusive?: string;
  /**
   * Set when the history, though anomaly-free, could not have shown the anomalies this checker looks
   * for (e.g. no read ran concurrently with a write of its key): the verdict is 'vacuous', never valid.
   */
  vacuous?: string;
}

export interface OpContext {
  client: TesseraClient;
  recorder: HistoryRecorder;
  process: number;
  rng: Rng;
  /** Per-operation client deadline. */
  opTimeoutMs: number;
}

export interface Workload {
  readonly name: string;
  readonly table: string;
  setup(client: TesseraClient): Promise<void>;
  /** Perform and record one operation; returns its completion type. */
  step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'>;
  /** After healing: the final read(s) the checker needs (bounded retries). */
  final(client: TesseraClient, recorder: HistoryRecorder, process: number): Promise<void>;
  check(history: readonly HistoryOp[]): WorkloadVerdict;
}

/** Codes that prove an operation did not take effect (refused before anything was applied). */
const DEFINITE_FAILURES: ReadonlySet<string> = new Set([ErrorCode.INVALID_ARGUMENT, ErrorCode.TABLE_NOT_FOUND, ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED, ErrorCode.NOT_SAFE]);

/**
 * Jepsen's rule: a read that errs had no effect (fail); a write that errs after it may have been sent
 * is indeterminate (info) unless the code proves it was refused.
 */
export function completionOfError(e: unknown, readOnly: boolean): 'fail' | 'info' {
  if (readOnly) return 'fail';
  return e instanceof DbError && DEFINITE_FAILURES.has(e.code) ? 'fail' : 'info';
}

export function errorText(e: unknown): string {
  return e instanceof DbError ? `${e.code}: ${e.message.split('\n')[0]}` : (e as Error).message ?? String(e);
}

/** Retry f until it succeeds or the bound is reached (final reads after a heal). */
export async function retryBounded<T>(f: () => Promise<T>, attemptsMax: number, pauseMs: number): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attemptsMax; i++) {
    try {
      return await f();
    } catch (e) {
      last = e;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
  throw last;
}

/** Bound on waiting for the master to create the system table `transactions`. */
export const TXN_TABLE_WAIT_MS = 30_000;

/** Transactional workloads need the status tablets: wait (bounded) until `transactions` has tablets. */
export async function waitForTransactionsTable(client: TesseraClient): Promise<void> {
  await retryBounded(async () => {
    const loc = await client.tableLocations(TRANSACTIONS_TABLE, { timeoutMs: 2_000 });
    if (loc.tablets.length === 0 || loc.tablets.some((t) => !t.replicas.some((r) => r.role === 'LEADER'))) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'status tablets have no leaders yet');
  }, Math.ceil(TXN_TABLE_WAIT_MS / 500), 500);
}
