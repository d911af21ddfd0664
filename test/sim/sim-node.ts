/**
 * One simulated replica: a RawNode over a MemoryLogStorage that tracks durability, and a toy state
 * machine whose state is the prefix hash of the applied log (so state equality = log equality).
 * beginReady() / finishSync() are the host loop of the Ready contract with the fsync in flight between
 * them, and applySome() its separate apply stage (as raft/raft-group.ts: inputs keep arriving and
 * stepping the core meanwhile, and committed entries reach the state machine later), with hooks for
 * the checker.
 */
import type { NodeId, Rng } from '../../common';
import type { ConfState, Entry, Message, Ready, Snapshot } from '../../raft';
import { bootstrapEntries, bootstrapStorage, decodeConfChange, RawNode } from '../../raft';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';
import type { SimChecker } from './sim-checker';
import { chainHash, decodeU32, encodeU32 } from './sim-hash';

export interface SimNodeOptions {
  electionTicks: number;
  heartbeatTicks: number;
  maxSizePerMsgBytes: number;
  maxInflightMsgs: number;
}

export class SimNode {
  readonly storage = new MemoryLogStorage({ trackDurability: true });
  raw: RawNode | undefined;
  /** State machine: applied index, and its state (the prefix hash at that index). */
  appliedIndex = 0;
  smHash = 0;
  /** Configuration as of appliedIndex (what a snapshot taken now must carry). */
  conf: ConfState;
  /** Proposal ids applied here, reported to the driver. */
  onApplyProposal: (id: number, index: number) => void = () => {};
  /** Read requests this node accepted: context -> lower bound on the index it must return. */
  readonly readBounds = new Map<string, number>();

  constructor(
    readonly id: NodeId,
    private readonly bootConf: ConfState,
    private readonly opts: SimNodeOptions,
    private readonly checker: SimChecker,
  ) {
    this.conf = bootConf;
    if (bootConf.voters.length > 0) {
      bootstrapStorage(this.storage, bootConf.voters);
      let h = 0;
      for (const e of bootstrapEntries(bootConf.voters)) {
        h = chainHash(h, e);
        checker.recordChain(id, e.index, e.term, h);
      }
    }
    void this.storage.sync();
  }

  get alive(): boolean {
    return this.raw !== undefined;
  }

  start(rng: Rng): void {
    // The state machine is volatile: it restarts from the stored snapshot and replays the log.
    const snap = this.storage.snapshot();
    this.appliedIndex = snap ? snap.meta.index : 0;
    this.smHash = snap ? decodeU32(snap.data) : 0;
    this.conf = snap ? snap.meta.conf : this.bootConf;
    // Raft's configuration must be the one as of `applied`; later changes are re-applied on replay.
    this.storage.setConfState(this.conf);
    this.raw = new RawNode({
      id: this.id,
      storage: this.storage,
      applied: this.appliedIndex,
      electionTicks: this.opts.electionTicks,
      heartbeatTicks: this.opts.heartbeatTicks,
      maxSizePerMsgBytes: this.opts.maxSizePerMsgBytes,
      maxInflightMsgs: this.opts.maxInflightMsgs,
      rng,
    });
    const s = this.raw.basicStatus();
    this.checker.restarted(this.id, s.term, s.vote, s.commit);
    this.readBounds.clear();
  }

  /** Power loss: everything not synced is gone, the process is down. */
  crash(): void {
    this.storage.crash();
    this.raw = undefined;
    this.syncingReady = undefined;
    this.applyQueue.length = 0;
  }

  /** Committed entries handed to the apply stage and not applied yet (volatile, like the state machine). */
  private readonly applyQueue: Entry[] = [];

  get applyPending(): boolean {
    return this.applyQueue.length > 0;
  }

  /** The apply stage runs: up to `max` queued entries reach the state machine (conf changes reach the core). */
  applySome(max: number): void {
    this.applyCommitted(this.applyQueue.splice(0, max));
  }

  /** The Ready whose fsync is in flight (begun, not finished), and the messages that wait for it. */
  private syncingReady: { rd: Ready; late: Message[] } | undefined;

  get syncing(): boolean {
    return this.syncingReady !== undefined;
  }

  /**
   * Start one Ready through the host contract (raft/raft-group.ts): write the snapshot, entries and
   * hard state, then either finish at once (nothing to sync) or leave the fsync in flight — a leader's
   * appends and heartbeats go out now, the rest with finishSync(). Returns the messages to send now.
   */
  beginReady(): Message[] {
    const raw = this.raw!;
    const rd = raw.ready();
    const st = raw.basicStatus();
    if (rd.snapshot) {
      // As the real host: the apply stage drains before a snapshot replaces the state machine.
      this.applySome(this.applyQueue.length);
      this.storage.applySnapshot(rd.snapshot);
      this.applySnapshot(rd.snapshot);
    }
    if (rd.entries.length > 0) this.persistEntries(rd, st.role === 'LEADER' ? st.term : 0);
    if (rd.hardState) this.storage.setHardState(rd.hardState);
    // As the real host: committed entries (persisted by earlier Readys) go to the apply stage before
    // the sync, which applies them later, in order (applySome), while the core goes on.
    for (const e of rd.committedEntries) this.applyQueue.push(e);
    if (!rd.mustSync) return this.completeReady(rd, rd.messages);
    const isEarly = (m: Message) => st.role === 'LEADER' && (m.type === 'append' || m.type === 'heartbeat');
    this.syncingReady = { rd, late: rd.messages.filter((m) => !isEarly(m)) };
    return rd.messages.filter(isEarly);
  }

  /**
   * While the fsync is in flight, as raft/raft-group.ts does for inputs that arrive meanwhile: the
   * committed entries earlier syncs persisted go to the apply stage, a leader's appends and heartbeats
   * go out (RawNode.takeEarly). Returns the messages and how many entries went to the apply stage.
   */
  takeEarly(): { messages: Message[]; entries: number } {
    const e = this.raw!.takeEarly(true);
    if (!e) return { messages: [], entries: 0 };
    for (const x of e.committedEntries) this.applyQueue.push(x);
    return { messages: e.messages, entries: e.committedEntries.length };
  }

  /** The in-flight sync completes: the Ready's remaining messages go out, and it is advanced. */
  finishSync(): Message[] {
    const { rd, late } = this.syncingReady!;
    this.syncingReady = undefined;
    void this.storage.sync();
    this.checker.synced(this.id, this.storage.initialState().hardState);
    return this.completeReady(rd, late);
  }

  private completeReady(rd: Ready, msgs: Message[]): Message[] {
    for (const rs of rd.readStates) {
      const key = Buffer.from(rs.context).toString('hex');
      const bound = this.readBounds.get(key);
      if (bound !== undefined && rs.index < bound) throw new Error(`read index: ${this.id} answered ${rs.index} but ${bound} was committed before the read`);
      this.readBounds.delete(key);
    }
    this.raw!.advance(rd);
    return msgs;
  }

  private applyCommitted(ents: readonly Entry[]): void {
    const raw = this.raw!;
    for (const e of ents) {
      const h = chainHash(this.smHash, e);
      this.checker.applied(this.id, e.index, e.term, h);
      if (e.index !== this.appliedIndex + 1) throw new Error(`${this.id}: applied ${e.index} after ${this.appliedIndex}`);
      this.appliedIndex = e.index;
      this.smHash = h;
      if (e.type === 'confChange') {
        const cc = decodeConfChange(e.data);
        if (!cc) throw new Error(`${this.id}: undecodable conf change at ${e.index}`);
        this.conf = raw.applyConfChange(cc);
        this.storage.setConfState(this.conf);
      } else if (e.type === 'normal' && e.data.length === 4) {
        this.onApplyProposal(decodeU32(e.data), e.index);
      }
    }
  }

  private persistEntries(rd: Ready, leaderTerm: number): void {
    const first = rd.entries[0]!;
    const prevIndex = first.index - 1;
    const prevTerm = prevIndex === 0 ? 0 : this.storage.term(prevIndex);
    let h = this.checker.chainHashOf(prevIndex, prevTerm);
    if (h === undefined) throw new Error(`${this.id}: no prefix hash known for ${prevIndex}/${prevTerm}`);
    for (const e of rd.entries) {
      h = chainHash(h, e);
      this.checker.recordChain(this.id, e.index, e.term, h);
    }
    if (leaderTerm > 0) this.checker.leaderAppended(this.id, leaderTerm, first.index, rd.entries[rd.entries.length - 1]!.index);
    this.storage.append(rd.entries);
  }

  private applySnapshot(s: Snapshot): void {
    const h = decodeU32(s.data);
    this.checker.snapshotInstalled(this.id, s.meta.index, h);
    this.appliedIndex = s.meta.index;
    this.smHash = h;
    this.conf = s.meta.conf;
  }

  /** Compact the log up to the applied index, leaving a snapshot of the state machine there. */
  compact(): boolean {
    const idx = this.appliedIndex;
    if (idx < this.storage.firstIndex() || idx > this.storage.lastIndex()) return false;
    const snap: Snapshot = { meta: { index: idx, term: this.storage.term(idx), conf: this.conf }, data: encodeU32(this.smHash) };
    this.storage.compact(idx, snap);
    void this.storage.sync();
    return true;
  }
}
