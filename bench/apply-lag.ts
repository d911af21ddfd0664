/**
 * Apply lag of distributed transactions: transaction commit → intents applied on EVERY replica of
 * every participant tablet. Each tserver keeps, per tablet replica, a bounded ring of the newest
 * applies (tserver/tablet/apply-lag-log.ts) and serves it at /api/v1/txn-applies?since=MICROS; this
 * file joins those records (pure core: applyLagOf) and polls the consoles until the transactions of
 * a measured window have settled (driver: measureApplyLag).
 *
 * A transaction counts as complete when it reports at least `minTablets` tablets and every one of them
 * reports `replicationFactor` distinct replicas; its lag is max(appliedMicros) − commitMicros. The
 * commit time is the physical part of the commit hybrid time and appliedMicros each replica's wall
 * clock: on one machine they share a clock, across machines skew would add to the figure.
 *
 * The same answer carries the status tablets' commit records (when each status replica applied a
 * transaction's COMMITTED record); with them the lag splits into stages (LagStages): the status
 * tablet's Raft round, the APPLY RPC and the participants' APPLY round, and the spread to the last
 * replica.
 */
import * as hdr from 'hdr-histogram-js';
import { getJson } from '../lab/console-http';
import { PeriodicRead } from './periodic-read';

export interface ApplyRecord {
  /** The tserver that reported it (one replica per tserver per tablet). */
  uuid: string;
  tabletId: string;
  txnId: string;
  commitMicros: number;
  appliedMicros: number;
}

/**
 * A status tablet replica applied a transaction's COMMITTED record (its commit point: commit()
 * answers once the status leader has). From /api/v1/txn-applies' `commits`.
 */
export interface CommitRecord {
  uuid: string;
  tabletId: string;
  txnId: string;
  commitMicros: number;
  committedMicros: number;
}

/**
 * Where a complete transaction's apply lag goes, p50/p99 over the complete transactions whose status
 * tablet reported the commit point (each stage's percentiles separately: they do not add up).
 */
export interface LagStages {
  /** Complete transactions with a commit record. */
  txns: number;
  /** Commit hybrid time → the COMMITTED record applied on the first status replica: the status tablet's Raft round. */
  commitRoundP50Ms: number;
  commitRoundP99Ms: number;
  /** That commit point → the first participant replica applied: the APPLY RPC to the participant leaders and the APPLY entry's Raft round. */
  toFirstP50Ms: number;
  toFirstP99Ms: number;
  /** First → last participant replica applied: the other participant tablet's APPLY round ending later, and the followers learning the commit index and applying. */
  spreadP50Ms: number;
  spreadP99Ms: number;
  /**
   * The spread taken apart. The later participant tablet: its quickest replica applied this long
   * after the other tablet's quickest (two APPLY rounds on two Raft groups end at different times).
   */
  otherTabletP50Ms: number;
  otherTabletP99Ms: number;
  /**
   * Followers behind their own tablet's quickest replica (the most of any participant tablet): the
   * leader's commit index reaching them, and their apply stage.
   */
  followersP50Ms: number;
  followersP99Ms: number;
}

export interface ApplyLagFigures {
  /** Transactions of the window whose every participant replica reported its apply. */
  complete: number;
  /** Transactions of the window with some records, but not from every replica (yet, or evicted). */
  incomplete: number;
  /** Absent when no transaction was complete. */
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /**
   * Commit → applied on the FIRST replica (the quickest of all participant replicas), over the same
   * complete transactions: the status tablet → participant leader → APPLY entry's Raft round path.
   * The rest of the lag is the spread to the last replica (followers learning the commit index and
   * applying).
   */
  firstP50Ms?: number;
  firstP99Ms?: number;
  /** Absent when no complete transaction had a commit record (e.g. servers that do not report them). */
  stages?: LagStages;
}

export interface ApplyLagFilter {
  replicationFactor: number;
  /** Participant tablets a transaction of this workload has at least (2 for the 2-row workload). */
  minTablets: number;
  /** Only transactions whose commit time lies in [commitFromMicros, commitToMicros]. */
  commitFromMicros?: number;
  commitToMicros?: number;
  /** Only these transactions. */
  txnIds?: ReadonlySet<string>;
}

/** Lags above this are clamped by the histogram (10 minutes). */
const LAG_US_MAX = 600_000_000;

interface TxnApplies {
  commitMicros: number;
  tablets: TabletApplies[];
}

interface TabletApplies {
  /** Interned tablet id (ApplyLagAccumulator.tabletIds). */
  tablet: number;
  /** One bit per replica that reported (interned tserver uuid). */
  replicas: number;
  firstMicros: number;
  lastMicros: number;
}

/** Replicas (tservers) an accumulator tells apart: one bit each. */
const REPLICAS_MAX = 31;

function bitCount(x: number): number {
  let n = 0;
  for (let v = x; v !== 0; v &= v - 1) n++;
  return n;
}

/**
 * The applies and commit records seen so far, grouped by transaction (kept small: a long window at
 * hundreds of transactions per second holds hundreds of thousands). Adding a record again changes
 * nothing (a replica counts once per tablet, times are min and max), so overlapping polls may feed it.
 */
export class ApplyLagAccumulator {
  private readonly byTxn = new Map<string, TxnApplies>();
  /** The commit point per transaction: the first status replica to apply its COMMITTED record. */
  private readonly committed = new Map<string, number>();
  private readonly uuids = new Map<string, number>();
  private readonly tabletIds = new Map<string, number>();
  private applies = 0;

  add(records: readonly ApplyRecord[], commits: readonly CommitRecord[] = []): void {
    for (const r of records) {
      let bit = this.uuids.get(r.uuid);
      if (bit === undefined) {
        if (this.uuids.size >= REPLICAS_MAX) throw new Error(`apply lag: more than ${REPLICAS_MAX} tservers reported`);
        this.uuids.set(r.uuid, (bit = 1 << this.uuids.size));
      }
      let tablet = this.tabletIds.get(r.tabletId);
      if (tablet === undefined) this.tabletIds.set(r.tabletId, (tablet = this.tabletIds.size));
      let t = this.byTxn.get(r.txnId);
      if (!t) this.byTxn.set(r.txnId, (t = { commitMicros: r.commitMicros, tablets: [] }));
      // Every replica records the same commit hybrid time; min() only guards against a stray record.
      t.commitMicros = Math.min(t.commitMicros, r.commitMicros);
      let tab = t.tablets.find((x) => x.tablet === tablet);
      if (!tab) t.tablets.push((tab = { tablet, replicas: 0, firstMicros: r.appliedMicros, lastMicros: r.appliedMicros }));
      if ((tab.replicas & bit) === 0) {
        tab.replicas |= bit;
        this.applies++;
      }
      tab.firstMicros = Math.min(tab.firstMicros, r.appliedMicros);
      tab.lastMicros = Math.max(tab.lastMicros, r.appliedMicros);
    }
    for (const c of commits) this.committed.set(c.txnId, Math.min(this.committed.get(c.txnId) ?? Number.POSITIVE_INFINITY, c.committedMicros));
  }

  /** Distinct (transaction, tablet, replica) applies seen so far. */
  get applyCount(): number {
    return this.applies;
  }

  /** Lag per complete transaction in milliseconds: to the last replica, and to the first. */
  lags(f: ApplyLagFilter): { lagsMs: Map<string, number>; firstLagsMs: Map<string, number>; incomplete: number; applied: Map<string, TxnAppliedTimes> } {
    const lagsMs = new Map<string, number>();
    const firstLagsMs = new Map<string, number>();
    const applied = new Map<string, TxnAppliedTimes>();
    let incomplete = 0;
    for (const [id, t] of this.byTxn) {
      if (f.txnIds && !f.txnIds.has(id)) continue;
      if ((f.commitFromMicros !== undefined && t.commitMicros < f.commitFromMicros) || (f.commitToMicros !== undefined && t.commitMicros > f.commitToMicros)) continue;
      const tablets = t.tablets;
      const complete = tablets.length >= f.minTablets && tablets.every((tab) => bitCount(tab.replicas) >= f.replicationFactor);
      if (!complete) {
        incomplete++;
        continue;
      }
      const firsts = tablets.map((tab) => tab.firstMicros);
      const firstAppliedMicros = Math.min(...firsts);
      const lastAppliedMicros = Math.max(...tablets.map((tab) => tab.lastMicros));
      lagsMs.set(id, Math.max(0, lastAppliedMicros - t.commitMicros) / 1000);
      firstLagsMs.set(id, Math.max(0, firstAppliedMicros - t.commitMicros) / 1000);
      applied.set(id, {
        commitMicros: t.commitMicros,
        firstAppliedMicros,
        lastAppliedMicros,
        otherTabletMicros: Math.max(...firsts) - firstAppliedMicros,
        followersMicros: Math.max(...tablets.map((tab) => tab.lastMicros - tab.firstMicros)),
      });
    }
    return { lagsMs, firstLagsMs, incomplete, applied };
  }

  /**
   * p50/p99/max of the complete transactions' lags, the first-replica p50/p99, the complete/incomplete
   * counts, and (given commit records) the lag's stages.
   */
  figures(f: ApplyLagFilter): ApplyLagFigures {
    const { lagsMs, firstLagsMs, incomplete, applied } = this.lags(f);
    if (lagsMs.size === 0) return { complete: 0, incomplete };
    const last = percentilesMs(lagsMs.values());
    const first = percentilesMs(firstLagsMs.values());
    const stages = lagStagesOf(applied, this.committed);
    return { complete: lagsMs.size, incomplete, ...last, firstP50Ms: first.p50Ms, firstP99Ms: first.p99Ms, ...(stages ? { stages } : {}) };
  }
}

/** When a complete transaction was committed, and applied on its first and its last participant replica. */
export interface TxnAppliedTimes {
  commitMicros: number;
  firstAppliedMicros: number;
  lastAppliedMicros: number;
  /** The latest participant tablet's quickest replica, minus the earliest tablet's quickest. */
  otherTabletMicros: number;
  /** The most any participant tablet's last replica applied after that tablet's quickest. */
  followersMicros: number;
}

/** Lag per complete transaction in milliseconds (pure): to the last replica, and to the first. */
export function completeTxnLagsMs(records: readonly ApplyRecord[], f: ApplyLagFilter): { lagsMs: Map<string, number>; firstLagsMs: Map<string, number>; incomplete: number; applied: Map<string, TxnAppliedTimes> } {
  const acc = new ApplyLagAccumulator();
  acc.add(records);
  return acc.lags(f);
}

/**
 * The stages of the complete transactions' lag that have a commit point (pure; undefined when none
 * has). `committed`: per transaction, when its first status replica (normally the leader) applied
 * the COMMITTED record.
 */
function lagStagesOf(applied: ReadonlyMap<string, TxnAppliedTimes>, committed: ReadonlyMap<string, number>): LagStages | undefined {
  const round: number[] = [];
  const toFirst: number[] = [];
  const spreadMs: number[] = [];
  const otherTabletMs: number[] = [];
  const followersMs: number[] = [];
  for (const [id, a] of applied) {
    const at = committed.get(id);
    if (at === undefined) continue;
    round.push(Math.max(0, at - a.commitMicros) / 1000);
    toFirst.push(Math.max(0, a.firstAppliedMicros - at) / 1000);
    spreadMs.push(Math.max(0, a.lastAppliedMicros - a.firstAppliedMicros) / 1000);
    otherTabletMs.push(a.otherTabletMicros / 1000);
    followersMs.push(a.followersMicros / 1000);
  }
  if (round.length === 0) return undefined;
  const r = percentilesMs(round);
  const t = percentilesMs(toFirst);
  const sp = percentilesMs(spreadMs);
  const ot = percentilesMs(otherTabletMs);
  const fo = percentilesMs(followersMs);
  return {
    txns: round.length,
    commitRoundP50Ms: r.p50Ms,
    commitRoundP99Ms: r.p99Ms,
    toFirstP50Ms: t.p50Ms,
    toFirstP99Ms: t.p99Ms,
    spreadP50Ms: sp.p50Ms,
    spreadP99Ms: sp.p99Ms,
    otherTabletP50Ms: ot.p50Ms,
    otherTabletP99Ms: ot.p99Ms,
    followersP50Ms: fo.p50Ms,
    followersP99Ms: fo.p99Ms,
  };
}

function percentilesMs(valuesMs: Iterable<number>): { p50Ms: number; p99Ms: number; maxMs: number } {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: LAG_US_MAX, numberOfSignificantValueDigits: 3 });
  let maxMs = 0;
  for (const ms of valuesMs) {
    h.recordValue(Math.min(LAG_US_MAX, Math.max(1, Math.round(ms * 1000))));
    maxMs = Math.max(maxMs, ms);
  }
  const r = { p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, maxMs };
  h.destroy();
  return r;
}

/**
 * p50/p99/max of the complete transactions' lags, the first-replica p50/p99, the complete/incomplete
 * counts, and (given the status tablets' commit records) the lag's stages (pure).
 */
export function applyLagOf(records: readonly ApplyRecord[], f: ApplyLagFilter, commits: readonly CommitRecord[] = []): ApplyLagFigures {
  const acc = new ApplyLagAccumulator();
  acc.add(records, commits);
  return acc.figures(f);
}

/** Parse one /api/v1/txn-applies answer (unknown at the boundary). */
export function parseApplies(body: unknown): ApplyRecord[] {
  const b = body as { uuid?: unknown; applies?: unknown };
  if (typeof b !== 'object' || b === null || typeof b.uuid !== 'string' || !Array.isArray(b.applies)) throw new Error('txn-applies: answer without uuid/applies');
  const uuid = b.uuid;
  return b.applies.map((x: unknown) => {
    const a = x as Partial<Record<'tabletId' | 'txnId' | 'commitMicros' | 'appliedMicros', unknown>>;
    if (typeof a.tabletId !== 'string' || typeof a.txnId !== 'string' || typeof a.commitMicros !== 'number' || typeof a.appliedMicros !== 'number') throw new Error('txn-applies: malformed record');
    return { uuid, tabletId: a.tabletId, txnId: a.txnId, commitMicros: a.commitMicros, appliedMicros: a.appliedMicros };
  });
}

/** The status tablets' commit records of one /api/v1/txn-applies answer ([] when it has none: an older server). */
export function parseCommits(body: unknown): CommitRecord[] {
  const b = body as { uuid?: unknown; commits?: unknown };
  if (typeof b !== 'object' || b === null || typeof b.uuid !== 'string') throw new Error('txn-applies: answer without uuid');
  if (b.commits === undefined) return [];
  if (!Array.isArray(b.commits)) throw new Error('txn-applies: commits is not a list');
  const uuid = b.uuid;
  return b.commits.map((x: unknown) => {
    const c = x as Partial<Record<'tabletId' | 'txnId' | 'commitMicros' | 'committedMicros', unknown>>;
    if (typeof c.tabletId !== 'string' || typeof c.txnId !== 'string' || typeof c.commitMicros !== 'number' || typeof c.committedMicros !== 'number') throw new Error('txn-applies: malformed commit record');
    return { uuid, tabletId: c.tabletId, txnId: c.txnId, commitMicros: c.commitMicros, committedMicros: c.committedMicros };
  });
}

const FETCH_TIMEOUT_MS = 10_000;
const POLL_INTERVAL_MS = 250;
/** How long measureApplyLag waits at most for the last transactions of a window to be applied everywhere. */
export const APPLY_SETTLE_MS_DEFAULT = 15_000;

/** Every tserver's applies (and status tablets' commit records) finished at or after sinceMicros. */
export async function fetchAppliesAndCommits(webAddresses: readonly string[], sinceMicros: number): Promise<{ applies: ApplyRecord[]; commits: CommitRecord[] }> {
  const bodies = await Promise.all(webAddresses.map((w) => getJson(`http://${w}/api/v1/txn-applies?since=${Math.floor(sinceMicros)}`, FETCH_TIMEOUT_MS)));
  return { applies: bodies.flatMap((b) => parseApplies(b)), commits: bodies.flatMap((b) => parseCommits(b)) };
}

/** Every tserver's applies finished at or after sinceMicros. */
export async function fetchApplies(webAddresses: readonly string[], sinceMicros: number): Promise<ApplyRecord[]> {
  return (await fetchAppliesAndCommits(webAddresses, sinceMicros)).applies;
}

/**
 * Poll the consoles until every transaction of the window is complete and the count of applies stops
 * growing, or settleMs passes; then the figures of what was seen (incomplete ones are counted).
 * `acc` may hold what a collector gathered during the window (the rings hold only the newest
 * applies); the polls here add what came after `sinceMicros`.
 */
export async function measureApplyLag(webAddresses: readonly string[], sinceMicros: number, f: ApplyLagFilter, settleMs = APPLY_SETTLE_MS_DEFAULT, acc = new ApplyLagAccumulator()): Promise<ApplyLagFigures> {
  const until = Date.now() + settleMs;
  let lastCount = -1;
  for (;;) {
    const { applies, commits } = await fetchAppliesAndCommits(webAddresses, sinceMicros);
    acc.add(applies, commits);
    const figures = acc.figures(f);
    if ((figures.incomplete === 0 && acc.applyCount === lastCount) || Date.now() >= until) return figures;
    lastCount = acc.applyCount;
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
  }
}

/**
 * How often a collector reads the consoles during a window. A read stalls each tserver's event loop
 * while it builds its answer, about 5 µs per record (a full ring of 3 tablets, 60,000 records: ~150
 * ms): frequent small reads keep each stall to a few milliseconds.
 */
export const COLLECT_EVERY_MS_DEFAULT = 2_000;
/**
 * Windows longer than this get a collector; a shorter one fits in the rings (20,000 applies per
 * replica, 30 s at 1,000 transactions per second) and is not disturbed by reads at all.
 */
export const COLLECT_WINDOW_MIN_SECONDS = 20;
/** Each read reaches back this far before the previous one began (an apply recorded while it ran). */
const COLLECT_OVERLAP_MICROS = 250_000;

/**
 * Gathers the applies and commit records of a long window while it runs. Each replica keeps only its
 * newest APPLY_LAG_RECORDS_MAX applies, which a window of a minute or more outgrows at hundreds of
 * transactions per second: read only at its end, its first transactions would be gone and its figures
 * would cover the last part alone. Used for windows longer than COLLECT_WINDOW_MIN_SECONDS.
 */
export class ApplyLagCollector {
  readonly acc = new ApplyLagAccumulator();
  private readonly reads: PeriodicRead;
  private nextSinceMicros: number;
  private lastError: string | undefined;
  private readCount = 0;

  constructor(
    private readonly webAddresses: readonly string[],
    sinceMicros: number,
    everyMs = COLLECT_EVERY_MS_DEFAULT,
  ) {
    this.nextSinceMicros = sinceMicros;
    this.reads = new PeriodicRead(() => this.read(), everyMs);
  }

  start(): void {
    this.reads.start();
  }

  private async read(): Promise<void> {
    const began = Date.now() * 1000;
    try {
      const { applies, commits } = await fetchAppliesAndCommits(this.webAddresses, this.nextSinceMicros);
      this.acc.add(applies, commits);
      this.nextSinceMicros = began - COLLECT_OVERLAP_MICROS;
      this.readCount++;
    } catch (e) {
      // The next read starts from the same point; if the rings outran it, the figures say so (incomplete).
      this.lastError = e instanceof Error ? e.message.split('\n')[0] : String(e);
    }
  }

  /** Stop reading; where the final reads should start, how many reads ran, and the last failure if any. */
  async stop(): Promise<{ sinceMicros: number; reads: number; lastError?: string }> {
    await this.reads.stop();
    return { sinceMicros: this.nextSinceMicros, reads: this.readCount, ...(this.lastError !== undefined ? { lastError: this.lastError } : {}) };
  }
}
