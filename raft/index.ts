/**
 * Public API of raft/: the pure core (RawNode), its host driver (RaftGroup), the message codec and
 * raft/wal's LogStorage implementations. Other folders import raft/ only through this file.
 */
export * from './types';
export { RawNode } from './raw-node';
export type { BasicStatus } from './raw-node';
export type { RaftOptions } from './raft-options';
export { encodeConfChange, decodeConfChange, applyToConfState, confChangeError } from './conf-change';
export { bootstrapEntries, bootstrapStorage, BOOTSTRAP_TERM } from './bootstrap';
export { committedIndex, majority } from './quorum';
export * from './wal';
export { RaftGroup, type LeaderChange, type RaftCore, type RaftGroupStatus } from './raft-group';
export { encodeMessage, decodeMessage } from './message-codec';
export { onRaftSendNow } from './raft-turn';
export { LogCacheBudget, type BudgetedCache } from './wal/log-cache-budget';
export { WalDurability, WAL_DURABILITY_LEVELS, DEFAULT_WAL_DURABILITY, isWalDurability, parseWalDurability, weakerDurability } from './wal/wal-durability';
