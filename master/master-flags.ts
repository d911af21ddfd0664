/**
 * Flags owned by the master (YugabyteDB spellings where the knob exists there). The sys-catalog Raft
 * timing flags carry a `master_` prefix because the registry is process-global and the tserver owns
 * the unprefixed tablet Raft flags (a `tessera` process loads both servers' code).
 */
import { defineFlag, FlagTag } from '../common/flags';

export { FS_DATA_DIRS, RPC_BIND_ADDRESSES, SERVER_BROADCAST_ADDRESSES, WEBSERVER_INTERFACE, WEBSERVER_PORT } from '../common/server-flags';

/** Standard ports of a master (YugabyteDB). */
export const MASTER_RPC_PORT_DEFAULT = 7100;
export const MASTER_WEB_PORT_DEFAULT = 7000;

export const MASTER_ADDRESSES = defineFlag({
  name: 'master_addresses',
  type: 'string',
  default: '',
  help: 'Comma-separated RPC host:port of every master (1 or 3). Empty: a single master at --rpc_bind_addresses.',
});

export const TSERVER_UNRESPONSIVE_TIMEOUT_MS = defineFlag({
  name: 'tserver_unresponsive_timeout_ms',
  type: 'int',
  default: 3_000,
  // YugabyteDB waits 60 s; a lab wants to see re-replication within seconds of a kill.
  help: 'A tserver without a heartbeat for this long is dead: its replicas are re-replicated (YugabyteDB default 60000; lab default 3000).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 100 ? undefined : 'at least 100 ms'),
});

export const REPLICATION_FACTOR = defineFlag({
  name: 'replication_factor',
  type: 'int',
  default: 3,
  help: 'Replicas per tablet when CreateTable does not say.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 7 ? undefined : 'between 1 and 7'),
});

export const TRANSACTION_TABLE_NUM_TABLETS = defineFlag({
  name: 'transaction_table_num_tablets',
  type: 'int',
  default: 1,
  // YugabyteDB derives many per tserver; on a lab machine every extra Raft group splits the commit
  // entries into smaller batches: measured on 2 cores, 3 tservers, 2-row transactions at c64,
  // 1 status tablet instead of 3 cost about 20 % less server CPU per transaction (c16 and c64).
  help: 'Status tablets of the system table `transactions`, fixed when the master creates it (the first time enough tservers are alive). More spread the coordinators over more leaders; fewer batch more commits per Raft entry.',
  validate: (v) => (v >= 1 && v <= 64 ? undefined : 'between 1 and 64'),
});

export const MASTER_RAFT_TICK_INTERVAL_MS = defineFlag({
  name: 'master_raft_tick_interval_ms',
  type: 'int',
  default: 50,
  help: 'Interval of one sys-catalog Raft tick.',
  validate: (v) => (v >= 1 && v <= 10_000 ? undefined : 'between 1 and 10000 ms'),
});

export const MASTER_RAFT_ELECTION_TIMEOUT_TICKS = defineFlag({
  name: 'master_raft_election_timeout_ticks',
  type: 'int',
  default: 20,
  help: 'Sys-catalog ticks without a leader before a master starts a (pre-)election; randomized in [n, 2n).',
  validate: (v) => (v >= 3 ? undefined : 'at least 3'),
});

export const CATALOG_RECONCILE_INTERVAL_MS = defineFlag({
  name: 'catalog_manager_bg_task_wait_ms',
  type: 'int',
  default: 500,
  help: 'Interval of the leader master background round: create missing replicas, replace dead ones, balance leaders.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 10 ? undefined : 'at least 10 ms'),
});

export const LEADER_BALANCE_MOVES_MAX = defineFlag({
  name: 'load_balancer_max_concurrent_moves',
  type: 'int',
  default: 2,
  help: 'Leader step-downs the balancer starts per background round (0 disables leader balancing).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 && v <= 100 ? undefined : 'between 0 and 100'),
});

export const ENABLE_LOAD_BALANCING = defineFlag({
  name: 'enable_load_balancing',
  type: 'bool',
  default: true,
  help: 'Replace replicas of dead tservers and balance tablet leaders.',
  tags: [FlagTag.runtime],
});

export const CREATE_TABLE_WAIT_MS = defineFlag({
  name: 'create_table_wait_for_leaders_ms',
  type: 'int',
  default: 10_000,
  help: 'CreateTable answers once every new tablet has a leader, or after this long (the client retries meanwhile).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'non-negative'),
});

export const ORACLE_RANGE_MS = defineFlag({
  name: 'timestamp_oracle_range_ms',
  type: 'int',
  default: 3_000,
  // Percolator's oracle persists a mark ahead and serves from memory: one sys-catalog entry per range.
  help: 'Wall time each timestamp-oracle reservation covers (one sys-catalog Raft entry per range; a failover skips at most this much).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 10 && v <= 600_000 ? undefined : 'between 10 and 600000 ms'),
});
