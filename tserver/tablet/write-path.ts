/**
 * The leader's write path (docs/architecture.md §Write path): retryable requests (a copy of a write
 * is answered, not run again), row latches (lock-table.ts), other transactions' intents on the rows,
 * INSERT/UPDATE existence checks, a hybrid time above every earlier write, one WRITE entry; the
 * write is acknowledged after Raft commit and local apply. Row latches of a write whose entry timed
 * out are released only once it settles (releaseWhenSettled).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import type { DocDbApi, DocKey, Row, RowOp } from '../../docdb';
import { traceStage } from '../../common/stage-trace';
import { WRITE_TIMEOUT_MS } from '../tserver-flags';
import { writeCombined, type CombinedWritesDeps } from './combined-writes';
import { checkFastPathConflicts } from './fast-path';
import { writeFastPathBatch, type FastPathBatchDeps } from './fast-path-batch';
import { LockTable } from './lock-table';
import type { MvccClock } from './mvcc-clock';
import type { TxnParticipant } from './participant/txn-participant';
import type { RetryableRequests } from './retryable-requests';
import type { RowLockTable } from './row-locks';
import { docKeyString, encodeTabletOp, type RequestTag, type TabletOp } from './tablet-op';
import { releaseWhenSettled, type ProposalTracker, type WriteRequest } from './tablet-types';

export interface WritePathDeps {
  tabletId: string;
  flags: Flags;
  clock: HybridClock;
  db(): DocDbApi;
  mvcc: MvccClock;
  participant: TxnParticipant;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
  checkServing(): void;
  /** NOT_THE_LEADER errors get the leader's address. */
  withLeaderHint(e: unknown): unknown;
  /** Answer plain writes at Raft commit (tablet_write_answer_at_commit, and a table whose log is not ASYNC). */
  answerAtCommit(): boolean;
  /** The table's log holds an entry durably at Raft commit (not ASYNC): a commit may be acted on before the apply. */
  durableAtCommit(): boolean;
  /** Propose an entry to the tablet's Raft group (resolves once committed and applied here; `onCommitted` at commit: when behind other applies, or `always`). */
  propose(data: Uint8Array, onCommitted?: () => void, always?: boolean): Promise<unknown>;
  metrics: { writeOps: number; rowsWritten: number };
}

export class WritePath {
  /** Row latches of this leader's writes (every transactional write takes them too). */
  readonly locks = new LockTable();

  constructor(private readonly deps: WritePathDeps) {}

  /**
   * Propose one tablet op as leader and wait (bounded) until it is Raft-committed and applied here.
   * Used by the coordinator (TXN_STATUS) and the participant (APPLY_TXN / REMOVE_TXN). With
   * `atCommit`, when answerAtCommit() holds: `atCommit` runs as the entry commits behind other
   * applies and the wait ends there (the caller makes what the apply will show visible itself:
   * coordinator.ts commit); with `atCommitAlways` (and a log durable at commit) at every commit.
   */
  async proposeOp(op: TabletOp, timeoutMs?: number, onProposed?: (proposal: Promise<unknown>) => void, atCommit?: () => void, atCommitAlways = false): Promise<void> {
    this.deps.checkServing();
    const always = atCommitAlways && this.deps.durableAtCommit();
    const onCommit = atCommit !== undefined && (always || this.deps.answerAtCommit()) ? atCommit : undefined;
    let committed!: () => void;
    const whenCommitted = onCommit ? new Promise<void>((resolve) => (committed = resolve)) : undefined;
    const data = encodeTabletOp(op);
    const proposal = onCommit
      ? this.deps.propose(
          data,
          () => {
            onCommit();
            committed();
          },
          always,
        )
      : this.deps.propose(data);
    onProposed?.(proposal);
    try {
      await this.settledWithin(whenCommitted ? Promise.race([whenCommitted, proposal]) : proposal, timeoutMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS), op.type);
    } catch (e) {
      throw this.deps.withLeaderHint(e);
    }
  }

  /** `proposal`, or TIMED_OUT (outcome unknown: the entry may still commit) after `ms`. */
  private async settledWithin(proposal: Promise<unknown>, ms: number, what: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, `tablet ${this.deps.tabletId}: ${what} not committed within ${ms} ms (outcome unknown)`)), ms);
    });
    try {
      await Promise.race([proposal, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Leader: a copy of `request` — its hybrid time when this replica replicated it, or the outcome of
   * the original still running here (a promise) — else undefined (a new request). Throws what
   * checkServing throws, and STALE_REQUEST for a late copy.
   */
  seenRequest(request: RequestTag): HybridTime | Promise<HybridTime> | undefined {
    this.deps.checkServing();
    const seen = this.deps.retryable.check(request, this.deps.tabletId);
    return seen.kind === 'replicated' ? seen.ht : seen.kind === 'running' ? seen.result : undefined;
  }

  /**
   * Run a client write once, whatever copies of it arrive (retryable requests): a copy of a request
   * this replica replicated answers its hybrid time, a copy of one running here waits for it. The
   * running request's outcome is its Raft proposal's (exact: applied, or never), or its failure
   * before it proposed — not the caller's timeout, after which the entry may still commit.
   */
  deduped(request: RequestTag | undefined, run: (track: ProposalTracker) => Promise<HybridTime>): Promise<HybridTime> {
    if (!request) return run(() => undefined);
    this.deps.checkServing();
    const seen = this.deps.retryable.check(request, this.deps.tabletId);
    if (seen.kind === 'replicated') return Promise.resolve(seen.ht);
    if (seen.kind === 'running') return seen.result;
    let proposed = false;
    let settle!: { resolve: (ht: HybridTime) => void; reject: (e: unknown) => void };
    const outcome = new Promise<HybridTime>((resolve, reject) => (settle = { resolve, reject }));
    outcome.catch(() => undefined);
    this.deps.retryable.start(request, outcome);
    const result = run((proposal, ht) => {
      proposed = true;
      proposal.then(
        () => settle.resolve(ht),
        (e: unknown) => settle.reject(this.deps.withLeaderHint(e)),
      );
    });
    result.then(
      // A read-modify-write whose condition failed wrote nothing (0n): a copy runs it again.
      (ht) => {
        if (!proposed) settle.resolve(ht);
      },
      (e: unknown) => {
        if (!proposed) settle.reject(e);
      },
    );
    return result;
  }

  /** Write rows atomically (one Raft entry); resolves with the write's hybrid time. */
  async write(req: WriteRequest): Promise<HybridTime> {
    const deadlineMonoMs = req.deadlineMonoMs ?? performance.now() + this.deps.flags.get(WRITE_TIMEOUT_MS);
    return this.deduped(req.request, (track) => this.deps.rowLocks.waitingForLocks(req.waitForLocks === true, deadlineMonoMs, () => this.deps.clock.now(), () => this.writeOnce(req, track)));
  }

  /**
   * Read-modify-writes of several callers, sharing one entry where they can (combined-writes.ts); or
   * fast-path commits of several transactions (all of `reqs` with fastPathTxn: fast-path-batch.ts).
   * One answer per request.
   */
  writeCombined(reqs: readonly WriteRequest[]): Array<Promise<HybridTime>> {
    if (reqs.length > 0 && reqs.every((r) => r.fastPathTxn !== undefined)) {
      this.fastPathDeps ??= {
        ...this.deps,
        locks: this.locks,
        opsToWrite: (req, keys) => this.opsToWrite(req, keys),
        settledWithin: (p, ms, what) => this.settledWithin(p, ms, what),
        timeoutMs: (req) => req.deadlineMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS),
        writeAlone: (req) => this.write(req),
      };
      return writeFastPathBatch(this.fastPathDeps, reqs);
    }
    // Built once: spreading the deps on every request was a measurable share of a coalesced call's cost.
    this.combinedDeps ??= {
      ...this.deps,
      locks: this.locks,
      opsToWrite: (req, keys) => this.opsToWrite(req, keys),
      rowsForCalls: (keys, read) => this.rowsForCalls(keys, read),
      settledWithin: (p, ms, what) => this.settledWithin(p, ms, what),
      timeoutMs: (req) => req.deadlineMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS),
      writeAlone: (req) => this.write(req),
    };
    return writeCombined(this.combinedDeps, reqs);
  }

  private combinedDeps: CombinedWritesDeps | undefined;
  private fastPathDeps: FastPathBatchDeps | undefined;

  /**
   * Under the latches of every row of a combined entry (combined-writes.ts): other transactions'
   * intents on all of them (`keys`) settled in one pass, then the rows of `read` as they are now,
   * read together at one read time (currentRows' rule: every earlier write of them is applied).
   */
  private async rowsForCalls(keys: readonly DocKey[], read: readonly DocKey[]): Promise<Array<Row | undefined>> {
    await this.deps.participant.orderAfterIntents(keys.map((key) => ({ type: 'delete' as const, key })));
    return read.length === 0 ? [] : this.currentRows(read);
  }

  private async writeOnce(req: WriteRequest, track: ProposalTracker): Promise<HybridTime> {
    const { clock, mvcc } = this.deps;
    traceStage('write.start', this.deps.tabletId, 0);
    this.deps.checkServing();
    if (req.propagatedHt) clock.update(req.propagatedHt);
    const keys = req.computed ? req.computed.keys : req.ops.map((o) => o.op.key);
    const release = await this.locks.acquire(keys.map((k) => docKeyString(k)));
    // A write that timed out may still commit: its rows stay locked until its entry settles, or the
    // next read-modify-write of them would read without it and both would apply (a lost update).
    let unsettled: Promise<unknown> | undefined;
    try {
      const ops = await this.opsToWrite(req, keys);
      if (!ops) return 0n;
      this.deps.checkServing();
      // Strictly above every earlier write of this tablet (the clock already passed every applied one).
      const ht = mvcc.nextHt();
      // Row locks are judged at the write's own time (a lease may run out between check and write).
      this.deps.rowLocks.check(this.deps.tabletId, keys, req.heldLocks, ht);
      mvcc.addInflight(ht);
      const { proposal, answerable } = this.proposeWrite(encodeTabletOp(req.request ? { type: 'WRITE', ht, ops, request: req.request } : { type: 'WRITE', ht, ops }), ht, req.request);
      proposal.catch(() => mvcc.markApplied(ht));
      track(proposal, ht);
      // The latches are held until the entry is applied here, even when the answer goes at commit:
      // the next write of these rows reads (existence checks, intents) what this one wrote.
      unsettled = proposal;
      // unlockAfter: the lock ends once the write committed (leader-local, under the rows' latches still).
      const unlocks = this.deps.rowLocks.unlocksAfter(keys, req.heldLocks, req.unlockAfter, ht);
      await this.settledWithin(answerable, req.deadlineMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS), 'write');
      traceStage('write.end', this.deps.tabletId, 0);
      if (unlocks.length > 0) this.deps.rowLocks.releaseAfterWrite(unlocks);
      this.deps.metrics.writeOps++;
      this.deps.metrics.rowsWritten += keys.length;
      return ht;
    } catch (e) {
      throw this.deps.withLeaderHint(e);
    } finally {
      releaseWhenSettled(release, unsettled);
    }
  }

  /**
   * Propose a WRITE at `ht`. `answerable` settles when the client may be answered: at Raft commit
   * (answerAtCommit; mvcc.markAcked makes leader reads wait for its apply), else with `proposal` (applied here). A commit never outruns a failure: a proposal that
   * fails was never committed with its term (raft/proposal-tracker.ts).
   */
  private proposeWrite(data: Uint8Array, ht: HybridTime, request: RequestTag | undefined): { proposal: Promise<unknown>; answerable: Promise<unknown> } {
    if (!this.deps.answerAtCommit()) {
      const proposal = this.deps.propose(data);
      return { proposal, answerable: proposal };
    }
    let committed!: () => void;
    const atCommit = new Promise<void>((resolve) => (committed = resolve));
    const proposal = this.deps.propose(data, () => {
      this.deps.mvcc.markAcked(ht);
      // What the apply will record (idempotent there), now: the client's next request may carry a
      // min_running that makes a late copy of an older one stale before this entry is applied.
      if (request) this.deps.retryable.replicated(request, ht);
      committed();
    });
    return { proposal, answerable: Promise.race([atCommit, proposal]) };
  }

  /**
   * Under the rows' latches: the fast path's conflicts, other transactions' intents, the computed
   * ops of a read-modify-write (undefined: write nothing), the INSERT/UPDATE existence checks.
   */
  private async opsToWrite(req: WriteRequest, keys: DocKey[]): Promise<RowOp[] | undefined> {
    const { participant, clock } = this.deps;
    let ops = req.ops.map((o) => o.op);
    if (req.fastPathTxn) await checkFastPathConflicts({ docdb: this.deps.db(), clock, tabletId: this.deps.tabletId, conflictDeps: participant.conflictDeps() }, req.fastPathTxn, ops);
    // A read-modify-write meets intents on its whole rows (it reads them), as a delete would.
    await participant.orderAfterIntents(req.computed ? keys.map((key) => ({ type: 'delete' as const, key })) : ops);
    if (req.computed) {
      const computed = req.computed.compute(req.computed.readsRows === false ? keys.map(() => undefined) : await this.currentRows(keys));
      if (!computed) return undefined;
      ops = computed;
    }
    if (!req.ops.some((o) => o.kind === 'INSERT' || o.kind === 'UPDATE')) return ops;
    const readHt = clock.now();
    for (const o of req.ops) {
      if (o.kind !== 'INSERT' && o.kind !== 'UPDATE') continue;
      // Committed-but-not-yet-applied transactions count: their rows exist.
      const row = await this.deps.db().getRow(o.op.key, { readHt, resolveStatus: participant.readResolver() });
      if (o.kind === 'INSERT' && row) throw new DbError(ErrorCode.ALREADY_EXISTS, `tablet ${this.deps.tabletId}: row already exists`);
      if (o.kind === 'UPDATE' && !row) throw new DbError(ErrorCode.NOT_FOUND, `tablet ${this.deps.tabletId}: row does not exist`);
    }
    return ops;
  }

  /**
   * The rows of `keys` as they are now, for a read-modify-write under their locks: every earlier
   * write of these rows is applied (each held the locks until then), committed transactions' intents
   * count, and orderAfterIntents moved the clock past their commit times.
   */
  private async currentRows(keys: readonly DocKey[]): Promise<Array<Row | undefined>> {
    const readHt = this.deps.clock.now();
    const resolveStatus = this.deps.participant.readResolver();
    return Promise.all(keys.map((key) => this.deps.db().getRow(key, { readHt, resolveStatus })));
  }
}
