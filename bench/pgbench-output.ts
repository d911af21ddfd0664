/**
 * Reading pgbench's own figures for `bench --vs postgres` (bench/vs-postgres.ts): the summary it prints
 * after a run (tps, latency average, failed and retried transactions), the "done in" line of `-i`, and
 * the per-transaction logs of `-l` (latency per transaction, from which p50/p99 are taken: pgbench's
 * summary has only the average). Formats as pgbench 15 writes them.
 */
import { DbError, ErrorCode } from '../common/errors';

export interface PgbenchSummary {
  /** "tps = N (without initial connection time)". */
  tps: number;
  latencyAverageMs: number;
  /** "number of transactions actually processed". */
  transactions: number;
  /** "number of failed transactions" (0 when pgbench does not print it: versions before 15). */
  failed: number;
  /** "number of transactions retried" (printed only with --max-tries > 1). */
  retried: number;
}

function numberAfter(text: string, re: RegExp): number | undefined {
  const m = re.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The summary of a pgbench run (its stdout); a clear error when the tps line is missing. */
export function parsePgbenchSummary(stdout: string): PgbenchSummary {
  const tps = numberAfter(stdout, /^tps = ([0-9.]+) \(without initial connection time\)/m) ?? numberAfter(stdout, /^tps = ([0-9.]+)/m);
  if (tps === undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `pgbench printed no "tps = " line: ${stdout.trim().split('\n').slice(-3).join(' | ')}`);
  return {
    tps,
    latencyAverageMs: numberAfter(stdout, /^latency average = ([0-9.]+) ms/m) ?? Number.NaN,
    transactions: numberAfter(stdout, /^number of transactions actually processed: (\d+)/m) ?? 0,
    failed: numberAfter(stdout, /^number of failed transactions: (\d+)/m) ?? 0,
    retried: numberAfter(stdout, /^number of transactions retried: (\d+)/m) ?? 0,
  };
}

/** Seconds of `pgbench -i`'s "done in 12.34 s (drop tables …)" line (its stderr), if printed. */
export function parseInitDoneSeconds(stderr: string): number | undefined {
  return numberAfter(stderr, /^done in ([0-9.]+) s/m);
}

/**
 * Latencies (µs) of the successful transactions in a `pgbench -l` log. A line is
 * `client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]`; `time` is
 * the latency in µs, or `failed` / `serialization` / `deadlock` / `skipped` for a transaction that
 * did not complete, which is left out (it is counted in the summary's failed transactions).
 */
export function parseLogLatenciesUs(log: string): number[] {
  const out: number[] = [];
  for (const line of log.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6) continue;
    const us = Number(fields[2]);
    if (Number.isFinite(us) && /^\d+$/.test(fields[2] ?? '')) out.push(us);
  }
  return out;
}

/** The p-th percentile (0-100, nearest rank) of values sorted ascending; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** p50/p99 in ms of the latencies of several logs (one per pgbench thread). */
export function latencyPercentilesMs(logs: readonly string[]): { p50Ms: number; p99Ms: number; count: number } {
  const all = logs.flatMap(parseLogLatenciesUs).sort((a, b) => a - b);
  return { p50Ms: percentile(all, 50) / 1000, p99Ms: percentile(all, 99) / 1000, count: all.length };
}
