/** Public API of the Raft core. Hosts use RawNode; raft/wal provides the LogStorage implementations. */
export * from './types';
export { RawNode } from './raw-node';
export type { BasicStatus } from './raw-node';
export type { RaftOptions } from './raft-options';
export { encodeConfChange, decodeConfChange, applyToConfState, confChangeError } from './conf-change';
export { bootstrapEntries, bootstrapStorage, BOOTSTRAP_TERM } from './bootstrap';
export { committedIndex, majority } from './quorum';
export type { LogStorage, InitialState } from './wal/log-storage';
export * from './wal';
export { RaftGroup, type LeaderChange, type RaftCore, type RaftGroupStatus } from './raft-group';
export { encodeMessage, decodeMessage } from './message-codec';
export { LogCacheBudget, type BudgetedCache } from './wal/log-cache-budget';
