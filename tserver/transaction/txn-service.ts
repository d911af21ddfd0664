/**
 * The tserver's transaction services: TransactionCoordinatorService (answered by the coordinator of
 * the named status tablet, when this server hosts its leader) and TransactionParticipantService
 * (UpdateTransaction APPLY/REMOVE → one APPLY_TXN / REMOVE_TXN entry in the participant tablet's
 * Raft log; the leader acknowledges after its own apply). Also owns the coordinators of the status
 * tablets hosted here, the status client every replica resolves intents with, and the participant
 * sweep that removes intents of transactions found aborted (expired ones nobody told us about).
 */
import { TRANSACTIONS_TABLE } from '../../common/system-tables';
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import type { Logger } from '../../common/log';
import type { Rng } from '../../common/rng';
import type * as pb from '../../rpc';
import type { RpcClient, RpcServer } from '../../rpc';
import type { TabletManager } from '../tablet-manager';
import type { TabletPeer } from '../tablet/tablet-peer';
import { parseIsolation, TransactionCoordinator, type TxnInfo } from './coordinator';
import { TabletLocator } from './tablet-locator';
import { UpdateBatcher } from './update-batcher';
import { ApplyCoalescer, type ApplyTarget } from './apply-coalescer';
import type { TabletOp } from '../tablet/tablet-op';
import { TEST_TRANSACTION_IGNORE_APPLYING_PROBABILITY, TXN_APPLY_PROPOSE_DURING_SYNC, TXN_COALESCE_APPLIES, TXN_LAZY_STATUS_RECORD, TXN_LOCAL_UPDATES, TRANSACTION_CHECK_INTERVAL_MS, TRANSACTION_HEARTBEAT_USEC, TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS } from './txn-flags';
import { isValidTxnId } from '../tablet/participant/txn-record';
import { uncertaintyLimit } from '../tablet/participant/uncertainty';
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import { TxnStatusClient } from './txn-status-client';

/** Transactions one participant tablet checks per sweep. */
const SWEEP_TXNS_MAX = 100;
/** The sweep runs every this many check intervals. */
const SWEEP_EVERY_CHECKS = 4;
const TXN_IDS_PER_STATUS_REQUEST_MAX = 1000;
/** Transactions one UpdateTransaction request carries at most. */
const UPDATES_PER_REQUEST_MAX = 256;
/** UpdateTransaction requests in flight to one participant tablet at most (further updates queue and batch). */
const UPDATE_RPCS_IN_FLIGHT_MAX = 4;

export interface TxnServiceDeps {
  manager(): TabletManager;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  rng: Rng;
  client: RpcClient;
  masters(): string[];
  coordinatorMethods: pb.TxnCoordinatorMethods;
  participantMethods: pb.TxnParticipantMethods;
  masterMethods: Pick<pb.MasterMethods, 'listTables' | 'getTableLocations'>;
}

export interface TransactionsJson {
  coordinators: Array<{ tabletId: string; role: string; transactions: TxnInfo[]; forgottenCommits: CoordinatorMemoryJson }>;
  participants: Array<{ tabletId: string; table: string; role: string; transactions: Array<{ txnId: string; statusTablet: string; isolation: string; startHt: string; intentCount: number; applyingCommitHt: string }> }>;
}

/** What a status tablet replica can tell of lost commit answers (see TransactionCoordinator.settleFromHistory). */
export interface CoordinatorMemoryJson {
  /** Transactions started at or after this hybrid time are covered: the history floor of the replica's RegularDB ('0': GC never ran). */
  historyFloorHt: string;
  /** Status answers that proved a transaction never committed. */
  neverCommitted: number;
  /** Status answers that told a forgotten transaction COMMITTED from its record's history. */
  committedAnswers: number;
  /** Status answers left indefinite because the transaction started below the history floor. */
  uncovered: number;
}

export function coordinatorMemory(c: TransactionCoordinator): CoordinatorMemoryJson {
  return { historyFloorHt: c.historyFloorHt().toString(), neverCommitted: c.metrics.neverCommitted, committedAnswers: c.metrics.forgottenCommitAnswers, uncovered: c.metrics.uncovered };
}

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

function txnIdOf(s: string | undefined): TxnId {
  if (!isValidTxnId(s)) throw invalid(`bad txn_id '${String(s)}' (1..128 of [0-9A-Za-z_-])`);
  return TxnId(s);
}

export class TxnService {
  private readonly coordinators = new Map<string, TransactionCoordinator>();
  /** Coordinators still loading their records (not answering yet). */
  private readonly loading = new Map<string, TransactionCoordinator>();
  readonly locator: TabletLocator;
  readonly statusClient: TxnStatusClient;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private checks = 0;
  private stopped = false;

  constructor(private readonly deps: TxnServiceDeps) {
    const { client, masterMethods, coordinatorMethods } = deps;
    this.locator = new TabletLocator({
      masters: deps.masters,
      listTables: (a, r, t) => client.call(a, masterMethods.listTables, r, { timeoutMs: t }),
      getTableLocations: (a, r, t) => client.call(a, masterMethods.getTableLocations, r, { timeoutMs: t }),
      localReplicas: (id) => {
        const m = deps.manager();
        if (!m.has(id)) return [];
        const p = m.get(id);
        const leader = p.status().leader;
        const l = leader ? m.addressOf(leader) : undefined;
        return [...(l ? [l] : []), ...p.meta.peers.map((x) => m.addressOf(x.uuid) ?? x.rpcAddress)];
      },
      log: deps.log,
    });
    this.statusClient = new TxnStatusClient({
      locator: this.locator,
      getStatus: (a, r, t) => client.call(a, coordinatorMethods.getTransactionStatus, r, { timeoutMs: t }),
      abort: (a, r, t) => client.call(a, coordinatorMethods.abortTransaction, r, { timeoutMs: t }),
      onHybridTime: (ht) => deps.clock.update(ht),
    });
  }

  start(): void {
    this.sweepTimer = setInterval(() => {
      if (++this.checks % SWEEP_EVERY_CHECKS !== 0 || this.sweeping) return;
      this.sweeping = true;
      void this.sweep().finally(() => (this.sweeping = false));
    }, this.deps.flags.get(TRANSACTION_CHECK_INTERVAL_MS));
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.loading.values()) c.stop();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const c of this.coordinators.values()) c.stop();
    this.coordinators.clear();
  }

  // ---- coordinators of the status tablets hosted here -------------------------------------------

  async onPeerOpened(peer: TabletPeer): Promise<void> {
    if (peer.meta.tableName !== TRANSACTIONS_TABLE) return;
    const c = new TransactionCoordinator({
      peer,
      flags: this.deps.flags,
      clock: this.deps.clock,
      log: this.deps.log.child({ statusTablet: peer.tabletId }),
      updateParticipant: (tabletId, txnId, type, commitHt, timeoutMs) => this.updates.update(tabletId, { txnId, type, commitHt }, timeoutMs),
    });
    // Registered only once its records are loaded: before that an unknown id would read ABORTED.
    this.loading.set(peer.tabletId, c);
    try {
      await c.start();
    } finally {
      this.loading.delete(peer.tabletId);
    }
    if (this.stopped || c.isStopped()) {
      c.stop();
      return;
    }
    this.coordinators.set(peer.tabletId, c);
  }

  onPeerClosing(peer: TabletPeer): void {
    this.loading.get(peer.tabletId)?.stop();
    const c = this.coordinators.get(peer.tabletId);
    if (!c) return;
    c.stop();
    this.coordinators.delete(peer.tabletId);
  }

  /** UpdateTransaction to participant tablets, batched per tablet (update-batcher.ts). */
  private readonly updates = new UpdateBatcher(
    async (tabletId, batch, timeoutMs) => {
      const [first, ...rest] = batch;
      const req: pb.UpdateTransactionRequestPB = {
        tabletId,
        txnId: first!.txnId,
        type: first!.type,
        commitHt: first!.commitHt,
        ...(rest.length > 0 ? { more: rest.map((u) => ({ txnId: u.txnId, type: u.type, commitHt: u.commitHt })) } : {}),
      };
      const resp = (await this.updateHere(req)) ?? (await this.locator.call(tabletId, (addr) => this.deps.client.call(addr, this.deps.participantMethods.updateTransaction, req, { timeoutMs })));
      return batch.map((_, i) => {
        const r = resp.results?.[i];
        return r?.code ? DbError.fromResult({ code: r.code, message: r.message }) : undefined;
      });
    },
    UPDATE_RPCS_IN_FLIGHT_MAX,
    UPDATES_PER_REQUEST_MAX,
  );

  /**
   * UpdateTransaction answered in this process when the participant tablet's leader is here (a third
   * of the participants on a 3-server cluster): no request encoded, sent, decoded and answered over a
   * socket, and no network hop before the APPLY (txn_local_updates; docs/transactions.md "Apply lag").
   * Undefined: not the leader here (or it just stopped being it) — the caller sends the RPC.
   */
  private async updateHere(req: pb.UpdateTransactionRequestPB): Promise<pb.UpdateTransactionResponsePB | undefined> {
    const m = this.deps.manager();
    if (!this.deps.flags.get(TXN_LOCAL_UPDATES) || !m.has(req.tabletId ?? '') || !m.get(req.tabletId!).isLeaderReady()) return undefined;
    try {
      return await this.updateTransaction(req);
    } catch (e) {
      if (e instanceof DbError && (e.code === ErrorCode.NOT_THE_LEADER || e.code === ErrorCode.LEADER_NOT_READY || e.code === ErrorCode.TABLET_NOT_FOUND)) return undefined;
      throw e;
    }
  }

  private coordinator(statusTablet: string | undefined): TransactionCoordinator {
    if (!statusTablet) throw invalid('status_tablet missing');
    const c = this.coordinators.get(statusTablet);
    if (c) return c;
    const m = this.deps.manager();
    if (m.has(statusTablet)) {
      if (m.get(statusTablet).meta.tableName === TRANSACTIONS_TABLE) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `status tablet ${statusTablet} is loading its records`);
      throw invalid(`tablet ${statusTablet} is not a status tablet`);
    }
    throw new DbError(ErrorCode.TABLET_NOT_FOUND, `status tablet ${statusTablet} not found on this server`, { tabletId: statusTablet });
  }

  // ---- TransactionCoordinatorService ------------------------------------------------------------

  async createTransaction(req: pb.CreateTransactionRequestPB): Promise<pb.CreateTransactionResponsePB> {
    const c = this.coordinator(req.statusTablet);
    const priority = req.priority ?? 0;
    if (!Number.isFinite(priority)) throw invalid('priority must be a finite number');
    const readHt = await c.create(txnIdOf(req.txnId), parseIsolation(req.isolation), priority, req.propagatedHt || undefined);
    const globalLimitHt = uncertaintyLimit(readHt, this.deps.flags.get(MAX_CLOCK_SKEW_USEC)) ?? 0n;
    return { readHt, propagatedHt: this.deps.clock.now(), globalLimitHt, ...(this.deps.flags.get(TXN_LAZY_STATUS_RECORD) ? { lazyRecords: true } : {}) };
  }

  heartbeatTransaction(req: pb.HeartbeatTransactionRequestPB): Promise<pb.HeartbeatTransactionResponsePB> {
    return this.coordinator(req.statusTablet).heartbeat(txnIdOf(req.txnId), req.createIfMissing === true).then((status) => ({ status }));
  }

  async commitTransaction(req: pb.CommitTransactionRequestPB): Promise<pb.CommitTransactionResponsePB> {
    const c = this.coordinator(req.statusTablet);
    const parts = (req.participantTablets ?? []).filter((s) => typeof s === 'string' && s.length > 0);
    return { commitHt: await c.commit(txnIdOf(req.txnId), parts, req.propagatedHt || undefined, req.createIfMissing === true) };
  }

  async abortTransaction(req: pb.AbortTransactionRequestPB): Promise<pb.AbortTransactionResponsePB> {
    const c = this.coordinator(req.statusTablet);
    const parts = (req.participantTablets ?? []).filter((s) => typeof s === 'string' && s.length > 0);
    return { status: await c.abort(txnIdOf(req.txnId), parts) };
  }

  async getTransactionStatus(req: pb.GetTransactionStatusRequestPB): Promise<pb.GetTransactionStatusResponsePB> {
    const c = this.coordinator(req.statusTablet);
    const ids = req.txnIds ?? [];
    if (ids.length > TXN_IDS_PER_STATUS_REQUEST_MAX) throw invalid(`at most ${TXN_IDS_PER_STATUS_REQUEST_MAX} txn ids per request`);
    const starts = req.startHts ?? [];
    if (starts.length > ids.length) throw invalid(`start_hts has ${starts.length} times for ${ids.length} txn ids`);
    const st = await c.getStatus(ids.map(txnIdOf), req.readHt || undefined, starts.map((h) => BigInt(h)));
    return { statuses: st.map((s) => ({ txnId: s.txnId, status: s.status, commitHt: s.commitHt, priority: s.priority, ...(s.neverCommitted ? { neverCommitted: true } : {}) })), propagatedHt: this.deps.clock.now() };
  }

  // ---- TransactionParticipantService -----------------------------------------------------------

  async updateTransaction(req: pb.UpdateTransactionRequestPB): Promise<pb.UpdateTransactionResponsePB> {
    if (!req.tabletId) throw invalid('tablet_id missing');
    const peer = this.deps.manager().get(req.tabletId);
    peer.checkLeader();
    const more = req.more ?? [];
    if (more.length >= UPDATES_PER_REQUEST_MAX) throw invalid(`at most ${UPDATES_PER_REQUEST_MAX} transactions per UpdateTransaction`);
    const items = more.length === 0 ? [req] : [req, ...more];
    // Each update decided first (done already, wait for a running apply, or needs an entry); the
    // APPLYs that need one share ONE entry (APPLY_TXNS): one Raft entry, log record and apply step on
    // every replica for the whole request instead of one per transaction. REMOVEs (rare) keep theirs.
    const steps = items.map((u) => {
      try {
        return this.updateStep(peer, u);
      } catch (e) {
        return { error: e };
      }
    });
    const applies: Array<{ txnId: TxnId; commitHt: HybridTime }> = [];
    const seen = new Set<string>();
    for (const st of steps) {
      if ('apply' in st && !seen.has(st.apply.txnId)) {
        seen.add(st.apply.txnId);
        applies.push(st.apply);
      }
    }
    const entryOf = this.applyEntries(peer, applies);
    const settled = await Promise.allSettled(
      steps.map(async (st) => {
        if ('error' in st) throw st.error;
        if ('apply' in st) return entryOf(st.apply.txnId);
        if ('wait' in st) return st.wait;
        return undefined;
      }),
    );
    if (more.length === 0) {
      if (settled[0]!.status === 'rejected') throw settled[0]!.reason;
      return {};
    }
    return {
      results: settled.map((r) => (r.status === 'fulfilled' ? {} : DbError.from(r.reason).toResult())),
    };
  }

  /**
   * The entries that carry `applies` (one request's): held and joined with other requests' APPLYs
   * for this tablet until its Raft takes its next Ready (apply-coalescer.ts), or with
   * txn_coalesce_applies off ONE entry for the request. Returns each transaction's entry.
   */
  private applyEntries(peer: TabletPeer, applies: ReadonlyArray<{ txnId: TxnId; commitHt: HybridTime }>): (txnId: TxnId) => Promise<void> | undefined {
    if (applies.length === 0) return () => undefined;
    if (this.deps.flags.get(TXN_COALESCE_APPLIES)) {
      let target = this.applyTargets.get(peer);
      if (target === undefined) {
        const p = peer;
        target = { proposeOp: (op: TabletOp) => p.proposeOp(op), beforeNextReady: (fn: () => void, early: boolean) => p.raftGroup().beforeNextReady(fn, early) };
        this.applyTargets.set(peer, target);
      }
      const t = target;
      const byTxn = new Map(applies.map((a) => [a.txnId, this.applyCoalescer.apply(peer.tabletId, t, a.txnId, a.commitHt)] as const));
      return (txnId) => byTxn.get(txnId);
    }
    const entry = peer.proposeOp(applies.length === 1 ? { type: 'APPLY_TXN', txnId: applies[0]!.txnId, commitHt: applies[0]!.commitHt } : { type: 'APPLY_TXNS', txns: [...applies] });
    return () => entry;
  }

  private readonly applyCoalescer = new ApplyCoalescer(() => this.deps.flags.get(TXN_APPLY_PROPOSE_DURING_SYNC));
  private readonly applyTargets = new WeakMap<TabletPeer, ApplyTarget>();

  /**
   * What one update needs, decided without waiting: nothing (done already, or dropped by the test
   * flag), to wait for something running (an apply in progress, a REMOVE entry), or an APPLY entry.
   */
  private updateStep(peer: TabletPeer, req: pb.UpdateTransactionItemPB): { done: true } | { wait: Promise<unknown> } | { apply: { txnId: TxnId; commitHt: HybridTime } } {
    const txnId = txnIdOf(req.txnId);
    if (req.type === 'APPLY') {
      const commitHt = req.commitHt ?? 0n;
      if (commitHt <= 0n) throw invalid('APPLY needs commit_ht');
      if (this.deps.rng.next() < this.deps.flags.get(TEST_TRANSACTION_IGNORE_APPLYING_PROBABILITY)) return { done: true };
      // A resent APPLY while the first one is still applying (e.g. the sleep flag): acknowledge only
      // after this leader's own apply, without a second entry (and a second sleep).
      const running = peer.applyInProgress(txnId);
      if (running) return { wait: running };
      if (peer.localOutcome(txnId)?.status === 'COMMITTED') return { done: true };
      return { apply: { txnId, commitHt } };
    }
    if (req.type === 'REMOVE') {
      if (peer.localOutcome(txnId)?.status === 'ABORTED') return { done: true };
      return { wait: peer.proposeOp({ type: 'REMOVE_TXN', txnId }) };
    }
    throw invalid(`unknown update type '${String(req.type)}' (APPLY | REMOVE)`);
  }

  // ---- participant sweep -----------------------------------------------------------------------

  /** Remove intents of transactions whose status tablet says ABORTED (expired, lost a conflict). */
  private async sweep(): Promise<void> {
    for (const peer of this.deps.manager().list()) {
      if (!peer.isLeaderReady() || peer.meta.tableName === TRANSACTIONS_TABLE) continue;
      // A transaction younger than the expiry window cannot have expired; one aborted by a conflict
      // is in cleanupQueue (or its client removes it): skipping the young saves a status RPC per
      // running transaction and sweep under load.
      const expiryMs = (this.deps.flags.get(TRANSACTION_HEARTBEAT_USEC) * this.deps.flags.get(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS)) / 1000;
      const ids = peer.txnsWithIntents(expiryMs).slice(0, SWEEP_TXNS_MAX);
      for (const id of peer.cleanupQueue) if (ids.length < SWEEP_TXNS_MAX * 2) ids.push([id, '']);
      for (const [txnId, statusTablet] of ids) {
        try {
          const aborted = statusTablet === '' || (await this.statusClient.getStatus(txnId, statusTablet, this.deps.clock.now())).status === 'ABORTED';
          // A removed transaction can be queued again: intents of a write that raced its removal.
          if (aborted && peer.localOutcome(txnId)?.status !== 'COMMITTED') await peer.proposeOp({ type: 'REMOVE_TXN', txnId });
        } catch (err) {
          this.deps.log.debug({ err, txnId, tablet: peer.tabletId }, 'participant sweep: status check failed');
        }
      }
    }
  }

  // ---- console data ----------------------------------------------------------------------------

  coordinatorOf(tabletId: string): TransactionCoordinator | undefined {
    return this.coordinators.get(tabletId);
  }

  /** Each status tablet replica's memory of forgotten commits (metrics). */
  coordinatorMemories(): Array<{ tabletId: string } & CoordinatorMemoryJson> {
    return [...this.coordinators].map(([tabletId, c]) => ({ tabletId, ...coordinatorMemory(c) }));
  }

  /** Running transactions on the coordinators and participants of this server (for /transactions). */
  async snapshot(): Promise<TransactionsJson> {
    const coordinators: TransactionsJson['coordinators'] = [];
    for (const [tabletId, c] of this.coordinators) {
      const m = this.deps.manager();
      coordinators.push({ tabletId, role: m.has(tabletId) ? m.get(tabletId).status().role : '', transactions: c.snapshot(), forgottenCommits: coordinatorMemory(c) });
    }
    const participants: TransactionsJson['participants'] = [];
    for (const p of this.deps.manager().list()) {
      if (p.meta.tableName === TRANSACTIONS_TABLE) continue;
      const txns = await p.transactions().catch(() => []);
      if (txns.length === 0) continue;
      participants.push({
        tabletId: p.tabletId,
        table: p.meta.tableName,
        role: p.status().role,
        transactions: txns.map((t) => ({ txnId: t.meta.txnId, statusTablet: t.meta.statusTablet, isolation: t.meta.isolation, startHt: t.meta.startHt.toString(), intentCount: t.intentCount, applyingCommitHt: t.applying ? t.applying.commitHt.toString() : '' })),
      });
    }
    return { coordinators, participants };
  }

  register(server: RpcServer): void {
    const cm = this.deps.coordinatorMethods;
    server.handle(cm.createTransaction, (r) => this.createTransaction(r));
    server.handle(cm.heartbeatTransaction, (r) => this.heartbeatTransaction(r));
    server.handle(cm.commitTransaction, (r) => this.commitTransaction(r));
    server.handle(cm.abortTransaction, (r) => this.abortTransaction(r));
    server.handle(cm.getTransactionStatus, (r) => this.getTransactionStatus(r));
    server.handle(this.deps.participantMethods.updateTransaction, (r) => this.updateTransaction(r));
  }
}
