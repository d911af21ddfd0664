/**
 * The durable Raft log behind an interface (etcd's Storage, extended with writes). Implementations:
 * FileLogStorage (segment files, fsync, group commit) and MemoryLogStorage (tests, simulation).
 *
 * Ranges are [lo, hi). Entries below firstIndex() were compacted (ErrCompacted semantics: the call
 * throws DbError NOT_FOUND with details.compacted=true); an index above lastIndex() is unavailable
 * (NOT_FOUND with details.unavailable=true). A storage error is fail-stop.
 *
 * Returned entries are shared with the storage: callers must not mutate them or their data.
 */
import type { ConfState, Entry, HardState, Snapshot } from '../types';
import type { WalDurability } from './wal-durability';

export interface InitialState {
  hardState: HardState;
  conf: ConfState;
}

export interface LogStorage {
  initialState(): InitialState;
  /** Entries in [lo, hi), stopping early once `bytesMax` is exceeded (always at least one entry). */
  entries(lo: number, hi: number, bytesMax?: number): Entry[];
  term(index: number): number;
  /** Index of the first available entry (snapshot index + 1). */
  firstIndex(): number;
  lastIndex(): number;
  snapshot(): Snapshot | undefined;

  /** Append entries; an entry at index i replaces every entry at index >= i. Not yet durable. */
  append(entries: readonly Entry[]): void;
  setHardState(hs: HardState): void;
  /** Record the configuration in force (the host calls it after applying a conf change); durable at the next sync(). */
  setConfState(conf: ConfState): void;
  /** Replace the log with the snapshot's index/term as its base. */
  applySnapshot(snap: Snapshot): void;
  /** Discard entries up to and including `index` (it must be <= the applied index). */
  compact(index: number, snapshot?: Snapshot): void;
  /** Resolve once everything appended or set so far is durable (group commit: one fsync covers all). */
  sync(): Promise<void>;
  close(): Promise<void>;
  /** Change how far sync() waits (wal-durability.ts); absent for the in-memory one (nothing to sync). */
  setDurability?(level: WalDurability): void;
  /** The level in force. */
  durability?(): WalDurability;
  /** Counters of a storage that writes files (absent for the in-memory one: no fsync to count). */
  stats?(): { logFsyncs: number; syncMicros?: number; syncMaxMicros?: number; slowSyncs?: number; cacheBytes?: number };
}
