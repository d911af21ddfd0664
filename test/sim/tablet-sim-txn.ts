/**
 * Distributed transactions in the tablet simulator (docs/architecture.md, "Simulation"): the
 * simulator is the transaction coordinator (status tablet) and the client. Intents go through the
 * participant path tablet-service takes for a transactional write (`TabletPeer.writeIntents`); other
 * transactions' statuses reach the peers through the production `PeerTxnEnv` seam, answered from the
 * simulator's records; the decision (commit at a hybrid time of the coordinator's clock, or abort) is
 * driven to the tablet as txn-service's UpdateTransaction does (APPLY_TXN / REMOVE_TXN entries), and
 * every replica applies or cleans up through the production apply path.
 *
 * Invariants: after every step, on every serving replica, a transaction's rows are all visible or
 * none (never a part), and only a committed transaction's rows are ever visible, with the values it
 * wrote; at the end, every committed transaction's rows are on every replica, no aborted one's, the
 * hot keys (written by several transactions, so conflicts happen) hold the value of their
 * latest-committed writer, and no replica keeps an intent of a resolved transaction.
 */
import { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import type { SeededRng } from '../../common/rng';
import { Isolation, type DocKey, type TxnMeta } from '../../docdb';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { PeerTxnEnv, TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';

/** The status tablet the simulated transactions name (no such tablet: the simulator answers for it). */
const STATUS_TABLET = 'sim-status';
/** Keys several transactions write (negative: never a plain write's key). */
const HOT_KEYS = [-1, -2, -3, -4];
/** Transactions open at once at most. */
const OPEN_MAX = 3;
/** Steps a transaction stays under watch after its decision reached the tablet (per-step checks). */
const WATCH_AFTER_DONE_STEPS = 10;
/**
 * Steps after which an unanswered APPLY / REMOVE is sent again to whoever leads now (the coordinator
 * resends on a timer, whatever became of the first: its leader may be partitioned away for good).
 */
const RESEND_STEPS = 40;

/** What the transaction simulator needs of the tablet simulator. */
export interface TxnSimDeps {
  rng: SeededRng;
  wall: ConstructorParameters<typeof HybridClock>[0];
  keyOf(i: number): DocKey;
  nextKey(): number;
  step(): number;
  /** The ready leader's peer, if any. */
  leaderPeer(): TabletPeer | undefined;
  /** Bumped on every fault (restart, leader change, partition, membership change). */
  faultEpoch(): number;
  trace(line: string): void;
  fail(what: string): never;
}

export interface TxnSimCounts {
  txnsBegun: number;
  txnsCommitted: number;
  txnsAborted: number;
  /** Aborted by another transaction's conflict resolution (PeerTxnEnv.abort). */
  txnsAbortedByConflict: number;
  intentWrites: number;
  intentWritesFailed: number;
  /** Resolved transactions with a fault between their first intent and the tablet's acknowledgement. */
  txnsAcrossFaults: number;
}

type TxnState = 'WRITING' | 'COMMITTED' | 'ABORTED';

interface SimTxn {
  meta: TxnMeta;
  state: TxnState;
  commitHt?: HybridTime;
  /** Own keys (written by no one else) → value; hot keys → value, apart. */
  own: Map<number, bigint>;
  hot: Map<number, bigint>;
  /** Intent writes still to send before the decision. */
  writesLeft: number;
  inFlight: number;
  /** A write failed (its outcome unknown): the client aborts. */
  failed: boolean;
  firstEpoch?: number;
  /** The step the last APPLY / REMOVE went out at, while unanswered. */
  updatingSince?: number;
  /** The step at which a leader acknowledged APPLY / REMOVE. */
  doneAt?: number;
}

export class TxnSim {
  readonly counts: TxnSimCounts = { txnsBegun: 0, txnsCommitted: 0, txnsAborted: 0, txnsAbortedByConflict: 0, intentWrites: 0, intentWritesFailed: 0, txnsAcrossFaults: 0 };
  private readonly txns = new Map<TxnId, SimTxn>();
  /** The coordinator's clock: commit times come from it, above every intent and every PENDING answer. */
  private readonly clock: HybridClock;
  private nextId = 1;
  /** Bumped whenever what a replica should show changes (a decision, an acknowledgement, the watch window). */
  generation = 0;

  constructor(private readonly deps: TxnSimDeps) {
    this.clock = new HybridClock(deps.wall);
  }

  /** What every peer gets as its txnEnv: the coordinator's answers. */
  readonly env: PeerTxnEnv = {
    getStatus: (txnId, _statusTablet, readHt) => {
      // A PENDING answer at readHt promises a later commit above readHt (the status tablet's clock).
      this.clock.update(readHt);
      return Promise.resolve(this.statusOf(txnId));
    },
    abort: (txnId) => {
      const t = this.txns.get(txnId);
      if (t?.state === 'WRITING') {
        this.decide(t, 'ABORTED');
        this.counts.txnsAbortedByConflict++;
      }
      return Promise.resolve(this.statusOf(txnId));
    },
    known: (txnId) => {
      const st = this.statusOf(txnId);
      return st.status === 'PENDING' ? undefined : st;
    },
  };

  /** Keys any transaction ever wrote (the bound on rows a replica may hold). */
  keysWritten(): number {
    let n = 0;
    for (const t of this.txns.values()) n += t.own.size;
    return n + HOT_KEYS.length;
  }

  /** One client action: begin, write intents, or decide; `last`: decide everything still open. */
  act(): void {
    const { rng } = this.deps;
    const open = [...this.txns.values()].filter((t) => t.state === 'WRITING');
    const idle = open.filter((t) => t.inFlight === 0);
    if (open.length < OPEN_MAX && rng.next() < 0.4) return this.begin();
    if (idle.length === 0) return;
    const t = idle[rng.int(idle.length)]!;
    if (t.writesLeft > 0 && !t.failed) return this.writeIntents(t);
    // Decide once its writes are in: a failed write (outcome unknown) forces an abort, as a client would.
    this.decide(t, t.failed || rng.next() < 0.25 ? 'ABORTED' : 'COMMITTED');
  }

  /** End of the fault phase: every open transaction decides once its writes answered. */
  finish(): void {
    for (const t of this.txns.values()) if (t.state === 'WRITING' && t.inFlight === 0) this.decide(t, t.failed ? 'ABORTED' : 'COMMITTED');
  }

  /** Send each decided transaction's APPLY / REMOVE to the leader until one acknowledges (the coordinator's job). */
  drive(): void {
    for (const t of this.txns.values()) {
      if (t.state === 'WRITING' || t.doneAt !== undefined || t.inFlight > 0) continue;
      if (t.updatingSince !== undefined && this.deps.step() - t.updatingSince < RESEND_STEPS) continue;
      const peer = this.deps.leaderPeer();
      if (!peer) return;
      const since = this.deps.step();
      t.updatingSince = since;
      this.update(peer, t).then(
        () => {
          if (t.doneAt !== undefined) return;
          t.doneAt = this.deps.step();
          this.generation++;
          if (t.firstEpoch !== undefined && t.firstEpoch !== this.deps.faultEpoch()) this.counts.txnsAcrossFaults++;
          this.deps.trace(`step ${this.deps.step()}: ${t.meta.txnId} ${t.state === 'COMMITTED' ? 'applied' : 'removed'} (acknowledged)`);
        },
        () => undefined,
      ).finally(() => {
        if (t.updatingSince === since) t.updatingSince = undefined;
      });
    }
  }

  /** Transactions whose apply still runs on `peer` (off the ordered apply path). */
  applying(peer: TabletPeer): TxnId[] {
    return [...this.txns.keys()].filter((id) => peer.applyInProgress(id) !== undefined);
  }

  /** Every transaction decided and its decision acknowledged by the tablet. */
  allResolved(): boolean {
    for (const t of this.txns.values()) if (t.doneAt === undefined || t.inFlight > 0) return false;
    return true;
  }

  /** The per-step check on one serving replica: all-or-none, and only committed rows. */
  async checkStep(name: string, peer: TabletPeer): Promise<void> {
    const now = this.deps.step();
    for (const t of this.txns.values()) {
      // Watched from its decision until a while after the tablet acknowledged it: where rows appear
      // or vanish. (An open transaction's rows are first checked at its decision, still unapplied.)
      if (t.state === 'WRITING' || (t.doneAt !== undefined && now - t.doneAt > WATCH_AFTER_DONE_STEPS)) continue;
      if (t.own.size === 0) continue;
      await this.checkOwnRows(name, peer, t, false);
    }
  }

  /** The final check on one replica (after healing, everything resolved). */
  async checkFinal(name: string, peer: TabletPeer): Promise<void> {
    for (const t of this.txns.values()) await this.checkOwnRows(name, peer, t, true);
    for (const k of HOT_KEYS) {
      let want: { v: bigint; ht: HybridTime } | undefined;
      for (const t of this.txns.values()) {
        const v = t.hot.get(k);
        if (v !== undefined && t.state === 'COMMITTED' && (!want || t.commitHt! > want.ht)) want = { v, ht: t.commitHt! };
      }
      const got = await this.readValue(peer, k);
      if (got !== want?.v) this.deps.fail(`${name}: hot key ${k} holds ${String(got)}, its latest committed writer wrote ${String(want?.v)}`);
    }
    // A running apply still holds its intents (the final check runs once every apply ended: heal).
    const left = (await peer.transactions()).filter((x) => this.txns.has(x.meta.txnId) && peer.applyInProgress(x.meta.txnId) === undefined);
    if (left.length > 0) this.deps.fail(`${name}: intents left behind of resolved transaction(s) ${left.map((x) => `${x.meta.txnId} (${this.txns.get(x.meta.txnId)!.state}, ${x.intentCount} intents)`).join(', ')}`);
  }

  private async checkOwnRows(name: string, peer: TabletPeer, t: SimTxn, final: boolean): Promise<void> {
    let seen = 0;
    for (const [k, v] of t.own) {
      const got = await this.readValue(peer, k);
      if (got === undefined) continue;
      seen++;
      if (t.state !== 'COMMITTED') this.deps.fail(`${name}: row ${k} of ${t.state.toLowerCase()} transaction ${t.meta.txnId} is visible`);
      if (got !== v) this.deps.fail(`${name}: row ${k} of ${t.meta.txnId} holds ${got}, the transaction wrote ${v}`);
    }
    if (seen > 0 && seen < t.own.size) this.deps.fail(`${name}: ${seen} of the ${t.own.size} rows of committed transaction ${t.meta.txnId} are visible (a part of a transaction)`);
    if (final && t.state === 'COMMITTED' && seen === 0 && t.own.size > 0) {
      const held = (await peer.transactions()).find((x) => x.meta.txnId === t.meta.txnId);
      this.deps.fail(`${name}: committed transaction ${t.meta.txnId} is not visible after its apply (the replica holds ${held ? `${held.intentCount} intents of it${held.applying ? ', applying' : ''}` : 'no intent of it'}; local outcome ${JSON.stringify(peer.localOutcome(t.meta.txnId), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))})`);
    }
  }

  /** The row's value as a reader sees it above every commit so far (intents of pending transactions unseen). */
  private async readValue(peer: TabletPeer, k: number): Promise<bigint | undefined> {
    const readHt = this.clock.now() > peer.hybridNow() ? this.clock.now() : peer.hybridNow();
    // An intent reads as committed only while this replica's own apply of it runs (localOutcome from
    // pendingApplies, as TabletPeer's readers resolve it); otherwise as pending: unseen.
    const resolveStatus = (txnId: TxnId): Promise<{ status: 'PENDING' } | { status: 'COMMITTED'; commitHt: HybridTime }> => {
      const o = peer.applyInProgress(txnId) ? peer.localOutcome(txnId) : undefined;
      return Promise.resolve(o?.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: o.commitHt } : { status: 'PENDING' });
    };
    const row = await peer.db().getRow(this.deps.keyOf(k), { readHt, resolveStatus });
    const v = row?.columns.get(1);
    return typeof v === 'bigint' ? v : undefined;
  }

  private statusOf(txnId: TxnId): TxnStatusInfo {
    const t = this.txns.get(txnId);
    // A status tablet answers ABORTED for a transaction it has no record of.
    if (!t) return { status: 'ABORTED', priority: 0 };
    if (t.state === 'COMMITTED') return { status: 'COMMITTED', commitHt: t.commitHt!, priority: t.meta.priority };
    return { status: t.state === 'ABORTED' ? 'ABORTED' : 'PENDING', priority: t.meta.priority };
  }

  private begin(): void {
    const { rng } = this.deps;
    const txnId = TxnId(`sim-txn-${this.nextId++}`);
    const meta: TxnMeta = { txnId, statusTablet: STATUS_TABLET, isolation: rng.next() < 0.2 ? Isolation.SERIALIZABLE : Isolation.SNAPSHOT, priority: rng.int(1_000_000), startHt: this.clock.now() };
    this.txns.set(txnId, { meta, state: 'WRITING', own: new Map(), hot: new Map(), writesLeft: 1 + rng.int(3), inFlight: 0, failed: false });
    this.counts.txnsBegun++;
  }

  private writeIntents(t: SimTxn): void {
    const { rng } = this.deps;
    const peer = this.deps.leaderPeer();
    if (!peer) return;
    t.writesLeft--;
    const keys: number[] = [];
    for (let i = 1 + rng.int(3); i > 0; i--) keys.push(this.deps.nextKey());
    // Now and then a hot key too: other transactions write it, so intents conflict.
    if (rng.next() < 0.3) keys.push(HOT_KEYS[rng.int(HOT_KEYS.length)]!);
    const values = keys.map(() => BigInt(rng.int(1_000_000)));
    keys.forEach((k, i) => (k < 0 ? t.hot : t.own).set(k, values[i]!));
    t.firstEpoch ??= this.deps.faultEpoch();
    t.inFlight++;
    this.counts.intentWrites++;
    const ops = keys.map((k, i) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: this.deps.keyOf(k), columns: [{ columnId: 1, value: values[i]! }] } }));
    peer
      .writeIntents({ txn: t.meta, readHt: t.meta.startHt, ops, deadlineMs: 5_000 })
      .then(
        (ht) => {
          this.clock.update(ht);
        },
        (e: unknown) => {
          t.failed = true;
          this.counts.intentWritesFailed++;
          this.deps.trace(`step ${this.deps.step()}: intents of ${t.meta.txnId} failed: ${e instanceof Error ? e.message : String(e)}`);
        },
      )
      .finally(() => t.inFlight--);
  }

  private decide(t: SimTxn, to: 'COMMITTED' | 'ABORTED'): void {
    t.state = to;
    this.generation++;
    if (to === 'COMMITTED') {
      t.commitHt = this.clock.now();
      this.counts.txnsCommitted++;
    } else this.counts.txnsAborted++;
    this.deps.trace(`step ${this.deps.step()}: ${t.meta.txnId} ${to}${t.commitHt ? ` at ${t.commitHt}` : ''}`);
  }

  /** txn-service's UpdateTransaction step for one transaction on the participant leader. */
  private async update(peer: TabletPeer, t: SimTxn): Promise<void> {
    const txnId = t.meta.txnId;
    if (t.state === 'COMMITTED') {
      const running = peer.applyInProgress(txnId);
      if (running) return running;
      if (peer.localOutcome(txnId)?.status === 'COMMITTED') return;
      return peer.proposeOp({ type: 'APPLY_TXN', txnId, commitHt: t.commitHt! });
    }
    if (peer.localOutcome(txnId)?.status === 'ABORTED') return;
    return peer.proposeOp({ type: 'REMOVE_TXN', txnId });
  }
}
