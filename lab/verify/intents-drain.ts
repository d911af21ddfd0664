/**
 * After a verification run: does every replica let go of every transaction's provisional records?
 * Once the workload's clients are done, each transaction has committed (its intents move to
 * RegularDB on every replica, on each replica's own schedule), aborted (the coordinator has the
 * participants remove them), or been abandoned by a client that gave up (its record expires on the
 * coordinator after transaction_heartbeat_usec × transaction_max_missed_heartbeat_periods, and each
 * participant leader's sweep then removes its intents). So within a bounded time no replica of any
 * tablet may hold any intent. One still there after the deadline is a leak: an apply that never
 * finished on that replica, or a removal that never reached it. The check polls every tserver's
 * /api/v1/transactions (participant tablets; the status tablets' records are not intents).
 */
import { getJson } from '../console-http';
import type { WorkloadVerdict } from './workload';

export interface LeftOverIntents {
  server: string;
  tabletId: string;
  table: string;
  txnId: string;
  intentCount: number;
  /** The commit time when the replica knows the transaction committed and is applying it ('' otherwise). */
  applyingCommitHt: string;
}

export interface DrainReport {
  /** Every replica of every tablet held no provisional record at the last poll. */
  drained: boolean;
  /** Transactions (per replica) holding provisional records at the first poll. */
  openAtStart: number;
  /** Until drained, or until the deadline. */
  ms: number;
  /** Not drained: what was left at the last poll (at most LEFT_OVER_LISTED). */
  leftOver: LeftOverIntents[];
  /** Not drained: how many (replica, transaction) pairs were left in all. */
  leftOverCount: number;
  /** Servers whose console did not answer the last poll (their replicas are not judged). */
  unreachable: string[];
}

/**
 * Every replica must hold no provisional record within this long after a verification run's
 * convergence checks: an abandoned transaction expires on its coordinator after 5 s by default
 * (transaction_heartbeat_usec × transaction_max_missed_heartbeat_periods), and the participant
 * sweeps remove its intents at most 2 s later.
 */
export const INTENTS_DRAIN_TIMEOUT_MS = 60_000;
const LEFT_OVER_LISTED = 10;
const POLL_MS = 250;
const REQUEST_TIMEOUT_MS = 10_000;

interface TransactionsAnswer {
  participants?: Array<{ tabletId: string; table: string; transactions: Array<{ txnId: string; intentCount: number; applyingCommitHt: string }> }>;
}

/** Bounded: polls until no replica holds a provisional record, or `timeoutMs` passed. */
export async function checkIntentsDrained(o: { tservers: ReadonlyArray<{ name: string; webUrl: string }>; timeoutMs: number }): Promise<DrainReport> {
  const t0 = Date.now();
  let openAtStart: number | undefined;
  for (;;) {
    const left: LeftOverIntents[] = [];
    const unreachable: string[] = [];
    await Promise.all(
      o.tservers.map(async (ts) => {
        const a = (await getJson(`${ts.webUrl}/api/v1/transactions`, REQUEST_TIMEOUT_MS).catch(() => undefined)) as TransactionsAnswer | undefined;
        if (a === undefined) {
          unreachable.push(ts.name);
          return;
        }
        for (const p of a.participants ?? []) {
          for (const t of p.transactions) left.push({ server: ts.name, tabletId: p.tabletId, table: p.table, txnId: t.txnId, intentCount: t.intentCount, applyingCommitHt: t.applyingCommitHt });
        }
      }),
    );
    openAtStart ??= left.length;
    const ms = Date.now() - t0;
    if ((left.length === 0 && unreachable.length === 0) || ms >= o.timeoutMs) {
      left.sort((a, b) => a.txnId.localeCompare(b.txnId) || a.server.localeCompare(b.server));
      return { drained: left.length === 0, openAtStart, ms, leftOver: left.slice(0, LEFT_OVER_LISTED), leftOverCount: left.length, unreachable: unreachable.sort() };
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** One line for the report. */
export function drainLine(r: DrainReport): string {
  const unreachable = r.unreachable.length ? `; not asked (console unreachable): ${r.unreachable.join(', ')}` : '';
  if (r.drained) return `provisional records drained: no replica holds any intent ${r.ms} ms after the workload (${r.openAtStart} replica-transaction(s) open at first)${unreachable}`;
  const what = r.leftOver.map((l) => `${l.server} ${l.tabletId} (${l.table}) txn ${l.txnId}: ${l.intentCount} intent(s), ${l.applyingCommitHt ? `committed at ${l.applyingCommitHt}, apply not finished` : 'no outcome known on that replica'}`).join(' | ');
  return `provisional records LEFT OVER ${r.ms} ms after the workload: ${r.leftOverCount} replica-transaction(s) — ${what}${r.leftOverCount > r.leftOver.length ? ' | …' : ''}${unreachable}`;
}

/** The verdict with the drain check folded in: intents left on a reachable replica are the anomaly `intents-left-over` (pure). */
export function withDrain(v: WorkloadVerdict, r: DrainReport): WorkloadVerdict {
  const details = [...v.details, drainLine(r)];
  if (r.drained || r.leftOverCount === 0) return { ...v, details };
  return { ...v, valid: false, anomalies: { ...v.anomalies, 'intents-left-over': (v.anomalies['intents-left-over'] ?? 0) + r.leftOverCount }, details };
}
