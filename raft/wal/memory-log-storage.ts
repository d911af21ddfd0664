/**
 * LogStorage in memory (unit tests, the deterministic simulator). sync() resolves at once.
 *
 * With `trackDurability`, it also keeps what the last sync() made durable, and crash() drops everything
 * appended or set since then — a power loss in one call, so the simulator can restart a node from
 * exactly its acknowledged state. The durable copy is the state at the moment sync() was called.
 */
import type { ConfState, Entry, HardState, Snapshot } from '../types';
import type { InitialState, LogStorage } from './log-storage';
import { snapshotOutOfDateError } from './log-bounds';
import { MemoryLog } from './memory-log';

export interface MemoryLogStorageOptions {
  trackDurability?: boolean;
}

type PendingOp = { type: 'append'; entries: readonly Entry[] } | { type: 'compact'; index: number } | { type: 'reset'; index: number; term: number };

/** Beyond this many ops between syncs, sync() copies the log instead of replaying them (bounds memory). */
const PENDING_OPS_MAX = 1024;

interface DurableState {
  log: MemoryLog;
  hardState: HardState;
  conf: ConfState;
  snapshot: Snapshot | undefined;
}

export class MemoryLogStorage implements LogStorage {
  private log = new MemoryLog();
  private hardState: HardState = { term: 0, vote: '', commit: 0 };
  private conf: ConfState = { voters: [], learners: [] };
  private snap: Snapshot | undefined;
  private durable: DurableState | undefined;
  private pending: PendingOp[] = [];
  private pendingOverflow = false;
  private syncCount = 0;

  constructor(opts: MemoryLogStorageOptions = {}) {
    if (opts.trackDurability) this.durable = this.capture(this.log.clone());
  }

  initialState(): InitialState {
    return { hardState: { ...this.hardState }, conf: cloneConf(this.conf) };
  }

  entries(lo: number, hi: number, bytesMax?: number): Entry[] {
    return this.log.entries(lo, hi, bytesMax);
  }

  term(index: number): number {
    return this.log.term(index);
  }

  firstIndex(): number {
    return this.log.firstIndex();
  }

  lastIndex(): number {
    return this.log.lastIndex();
  }

  snapshot(): Snapshot | undefined {
    return this.snap;
  }

  append(entries: readonly Entry[]): void {
    this.log.append(entries);
    this.record({ type: 'append', entries: entries.slice() });
  }

  setHardState(hs: HardState): void {
    this.hardState = { ...hs };
  }

  setConfState(conf: ConfState): void {
    this.conf = cloneConf(conf);
  }

  applySnapshot(snap: Snapshot): void {
    const cur = this.log.offset();
    if (snap.meta.index <= cur) throw snapshotOutOfDateError(snap.meta.index, cur);
    this.log.reset(snap.meta.index, snap.meta.term);
    this.snap = snap;
    this.conf = cloneConf(snap.meta.conf);
    if (this.hardState.commit < snap.meta.index) this.hardState = { ...this.hardState, commit: snap.meta.index };
    this.record({ type: 'reset', index: snap.meta.index, term: snap.meta.term });
  }

  compact(index: number, snapshot?: Snapshot): void {
    this.log.compact(index);
    if (snapshot) this.snap = snapshot;
    this.record({ type: 'compact', index });
  }

  sync(): Promise<void> {
    this.syncCount++;
    if (this.durable) {
      let log: MemoryLog;
      if (this.pendingOverflow) log = this.log.clone();
      else {
        log = this.durable.log;
        for (const op of this.pending) applyOp(log, op);
      }
      this.durable = this.capture(log);
      this.pending = [];
      this.pendingOverflow = false;
    }
    return Promise.resolve();
  }

  /** How many times sync() was called (benchmarks count fsync-equivalents). */
  syncs(): number {
    return this.syncCount;
  }

  /**
   * Power loss: forget everything not made durable by a sync(). Only with `trackDurability`.
   * The storage stays usable, as if reopened after the restart.
   */
  crash(): void {
    const d = this.durable;
    if (!d) throw new Error('MemoryLogStorage.crash() needs { trackDurability: true }');
    this.log = d.log.clone();
    this.hardState = { ...d.hardState };
    this.conf = cloneConf(d.conf);
    this.snap = d.snapshot;
    this.pending = [];
    this.pendingOverflow = false;
    this.durable = this.capture(d.log);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private record(op: PendingOp): void {
    if (!this.durable || this.pendingOverflow) return;
    if (this.pending.length >= PENDING_OPS_MAX) {
      this.pending = [];
      this.pendingOverflow = true;
      return;
    }
    this.pending.push(op);
  }

  private capture(log: MemoryLog): DurableState {
    return { log, hardState: { ...this.hardState }, conf: cloneConf(this.conf), snapshot: this.snap };
  }
}

function applyOp(log: MemoryLog, op: PendingOp): void {
  switch (op.type) {
    case 'append':
      log.append(op.entries);
      return;
    case 'compact':
      log.compact(op.index);
      return;
    case 'reset':
      log.reset(op.index, op.term);
      return;
  }
}

function cloneConf(c: ConfState): ConfState {
  return { voters: [...c.voters], learners: [...c.learners] };
}
