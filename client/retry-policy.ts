/**
 * When a failed call may be tried again, and how long to wait. Only codes that say the request had
 * no effect are retried (DbError.retryable); NETWORK_ERROR / TIMED_OUT (outcome unknown) are retried
 * only for idempotent operations (reads, and writes without INSERT: applying an upsert, update or
 * delete twice leaves the same row).
 */
import { DbError, ErrorCode } from '../common/errors';

/** Attempts of one operation at most (the deadline usually ends it first). */
export const ATTEMPTS_MAX = 200;
const BACKOFF_BASE_MS = 5;
const BACKOFF_MAX_MS = 500;

export function isRetryable(e: DbError, idempotent: boolean): boolean {
  if (e.retryable) return true;
  if (!idempotent) return false;
  return e.code === ErrorCode.NETWORK_ERROR || e.code === ErrorCode.TIMED_OUT || e.code === ErrorCode.SHUTTING_DOWN;
}

/** Exponential with full jitter, capped. */
export function backoffMs(attempt: number, rand: () => number = Math.random): number {
  const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 10));
  return Math.max(1, Math.floor(cap * (0.5 + rand() / 2)));
}

export class Deadline {
  readonly atMs: number;
  constructor(timeoutMs: number) {
    this.atMs = performance.now() + timeoutMs;
  }
  remainingMs(): number {
    return Math.max(0, this.atMs - performance.now());
  }
  expired(): boolean {
    return this.remainingMs() <= 0;
  }
  timedOut(what: string, last?: DbError): DbError {
    return new DbError(ErrorCode.TIMED_OUT, `${what} did not finish before its deadline${last ? ` (last error: ${last.code}: ${last.message})` : ''}`, last ? { lastCode: last.code } : {});
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
