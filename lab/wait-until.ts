/** Bounded polling: wait on a condition, never on a fixed sleep. */
import { DbError, ErrorCode } from '../common';

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Names what we waited for in the timeout error. */
  what: string;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `cond` until it returns a value other than undefined/false; TIMED_OUT after timeoutMs. */
export async function waitUntil<T>(cond: () => Promise<T | undefined | false>, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 200;
  for (;;) {
    const v = await cond();
    if (v !== undefined && v !== false) return v;
    if (Date.now() >= deadline) throw new DbError(ErrorCode.TIMED_OUT, `timed out after ${opts.timeoutMs} ms waiting for ${opts.what}`);
    await sleep(Math.min(interval, Math.max(1, deadline - Date.now())));
  }
}
