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
 *
 * Once drained, each replica's count of strong intents — the counter reads consult to decide whether
 * to look into IntentsDB at all (/api/v1/tablets `intentsdb.intentCount`) — must be 0 too. A replica
 * that holds no intent but counts some (or fewer than none) has a counter that drifted: while it
 * counted too few, its reads could skip committed transactions' provisional records (stale and
 * fractured reads — the bug `--nemesis rebuild` found). That is the anomaly `intent-count-drift`.
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
  /** Drained: replicas holding no intent whose strong-intent counter is not 0 (after COUNT_POLLS polls). */
  countDrift?: CountDrift[];
  /** Drained: servers whose tablet counters could not be read (not judged). */
  countsUnread?: string[];
}

export interface CountDrift {
  server: string;
  tabletId: string;
  table: string;
  /** The replica's counter (IntentsDb.intentCount): 0 expected. */
  intentCount: number;
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
/** Polls of the counters: a drift must persist over all of them (a stray late write may come and go). */
const COUNT_POLLS = 4;

interface TabletsAnswer {
  tablets?: Array<{ tabletId: string; table: string; state: string; intentsdb?: { intentCount?: number } }>;
}

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
      const r: DrainReport = { drained: left.length === 0, openAtStart, ms, leftOver: left.slice(0, LEFT_OVER_LISTED), leftOverCount: left.length, unreachable: unreachable.sort() };
      if (!r.drained) return r;
      const counts = await checkCounters(o.tservers.filter((t) => !unreachable.includes(t.name)));
      return { ...r, ...counts };
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Replicas that hold no intent but count some: kept only if so at every one of COUNT_POLLS polls. */
async function checkCounters(tservers: ReadonlyArray<{ name: string; webUrl: string }>): Promise<{ countDrift: CountDrift[]; countsUnread: string[] }> {
  let drift: CountDrift[] = [];
  let unread: string[] = [];
  for (let poll = 0; poll < COUNT_POLLS; poll++) {
    if (poll > 0) await new Promise((r) => setTimeout(r, POLL_MS));
    const found: CountDrift[] = [];
    const missed: string[] = [];
    await Promise.all(
      tservers.map(async (ts) => {
        const t = (await getJson(`${ts.webUrl}/api/v1/tablets`, REQUEST_TIMEOUT_MS).catch(() => undefined)) as TabletsAnswer | undefined;
        if (t === undefined) {
          missed.push(ts.name);
          return;
        }
        const counted = (t.tablets ?? []).filter((x) => x.state === 'RUNNING' && (x.intentsdb?.intentCount ?? 0) !== 0);
        if (counted.length === 0) return;
        // Asked after the counters: a replica listing a transaction now holds intents (a late write), not a drift.
        const a = (await getJson(`${ts.webUrl}/api/v1/transactions`, REQUEST_TIMEOUT_MS).catch(() => undefined)) as TransactionsAnswer | undefined;
        if (a === undefined) {
          missed.push(ts.name);
          return;
        }
        const holding = new Set((a.participants ?? []).filter((p) => p.transactions.length > 0).map((p) => p.tabletId));
        for (const x of counted) if (!holding.has(x.tabletId)) found.push({ server: ts.name, tabletId: x.tabletId, table: x.table, intentCount: x.intentsdb?.intentCount ?? 0 });
      }),
    );
    drift = found.sort((a, b) => a.server.localeCompare(b.server) || a.tabletId.localeCompare(b.tabletId));
    unread = missed.sort();
    if (drift.length === 0) break;
  }
  return { countDrift: drift, countsUnread: unread };
}

/** One line for the report. */
export function drainLine(r: DrainReport): string {
  const unreachable = r.unreachable.length ? `; not asked (console unreachable): ${r.unreachable.join(', ')}` : '';
  if (r.drained) {
    const drift = r.countDrift ?? [];
    const counters = drift.length
      ? `; strong-intent counter DRIFTED on ${drift.length} replica(s) holding no intent — ${drift.map((d) => `${d.server} ${d.tabletId} (${d.table}) counts ${d.intentCount}`).join(' | ')}`
      : r.countDrift
        ? '; every strong-intent counter is 0'
        : '';
    const unread = r.countsUnread?.length ? `; counters not read: ${r.countsUnread.join(', ')}` : '';
    return `provisional records drained: no replica holds any intent ${r.ms} ms after the workload (${r.openAtStart} replica-transaction(s) open at first)${counters}${unread}${unreachable}`;
  }
  const what = r.leftOver.map((l) => `${l.server} ${l.tabletId} (${l.table}) txn ${l.txnId}: ${l.intentCount} intent(s), ${l.applyingCommitHt ? `committed at ${l.applyingCommitHt}, apply not finished` : 'no outcome known on that replica'}`).join(' | ');
  return `provisional records LEFT OVER ${r.ms} ms after the workload: ${r.leftOverCount} replica-transaction(s) — ${what}${r.leftOverCount > r.leftOver.length ? ' | …' : ''}${unreachable}`;
}

/**
 * The verdict with the drain check folded in (pure): intents left on a reachable replica are the
 * anomaly `intents-left-over`; a drained replica whose counter is not 0, `intent-count-drift`.
 */
export function withDrain(v: WorkloadVerdict, r: DrainReport): WorkloadVerdict {
  const details = [...v.details, drainLine(r)];
  const drift = r.countDrift?.length ?? 0;
  if (r.drained && drift > 0) return { ...v, valid: false, anomalies: { ...v.anomalies, 'intent-count-drift': (v.anomalies['intent-count-drift'] ?? 0) + drift }, details };
  if (r.drained || r.leftOverCount === 0) return { ...v, details };
  return { ...v, valid: false, anomalies: { ...v.anomalies, 'intents-left-over': (v.anomalies['intents-left-over'] ?? 0) + r.leftOverCount }, details };
}
