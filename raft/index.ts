/** Public API of the Raft core. Hosts use RawNode; raft/wal provides the LogStorage implementations. */
export * from './types';
export { RawNode } from './raw-node';
export type { BasicStatus } from './raw-node';
export type { RaftOptions } from './raft-options';
export { encodeConfChange, decodeConfChange, applyToConfState, confChangeError } from './conf-change';
export { bootstrapEntries, bootstrapStorage, BOOTSTRAP_TERM } from './bootstrap';
export { committedIndex, majority } from './quorum';
export type { LogStorage, InitialState } from './wal/log-storage';
export { WalDurability, WAL_DURABILITY_LEVELS, DEFAULT_WAL_DURABILITY, isWalDurability, parseWalDurability, weakerDurability } from './wal/wal-durability';
