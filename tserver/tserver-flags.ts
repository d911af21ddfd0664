/** Flags owned by the tablet server (YugabyteDB spellings and defaults where they exist). */
import { defineFlag, FlagTag } from '../common/flags';

export { FS_DATA_DIRS, PLACEMENT_ZONE, RPC_BIND_ADDRESSES, SERVER_BROADCAST_ADDRESSES, TEST_DROP_TRAFFIC_PEERS, WEBSERVER_INTERFACE, WEBSERVER_PORT } from '../common/server-flags';

/** Standard ports of a tserver (YugabyteDB). */
export const TSERVER_RPC_PORT_DEFAULT = 9100;
export const TSERVER_WEB_PORT_DEFAULT = 9000;

export const TSERVER_MASTER_ADDRS = defineFlag({
  name: 'tserver_master_addrs',
  type: 'string',
  default: '',
  help: 'Comma-separated host:port of every master. Empty: run without a master (tests).',
});

export const RAFT_TICK_INTERVAL_MS = defineFlag({
  name: 'raft_tick_interval_ms',
  type: 'int',
  default: 50,
  help: 'Interval of one Raft tick (heartbeats and election timeouts are counted in ticks).',
  validate: (v) => (v >= 1 && v <= 10_000 ? undefined : 'between 1 and 10000 ms'),
});

export const RAFT_ELECTION_TIMEOUT_TICKS = defineFlag({
  name: 'raft_election_timeout_ticks',
  type: 'int',
  default: 20,
  help: 'Ticks without a leader before a follower starts a (pre-)election; randomized in [n, 2n).',
  validate: (v) => (v >= 3 ? undefined : 'at least 3'),
});

export const RAFT_HEARTBEAT_TICKS = defineFlag({
  name: 'raft_heartbeat_ticks',
  type: 'int',
  default: 5,
  help: 'Ticks between leader heartbeats (every 250 ms at the default tick: 4 to 8 per election timeout, as YugabyteDB sends 6; every 100 ms cost an idle tserver about twice the CPU); must be below raft_election_timeout_ticks.',
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const HEARTBEAT_INTERVAL_MS = defineFlag({
  name: 'heartbeat_interval_ms',
  type: 'int',
  default: 500,
  help: 'Interval of tserver heartbeats (with tablet reports) to the master leader.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 10 ? undefined : 'at least 10 ms'),
});

export const WRITE_TIMEOUT_MS = defineFlag({
  name: 'tablet_write_timeout_ms',
  type: 'int',
  default: 10_000,
  help: 'Longest a write waits for Raft commit and apply before answering TIMED_OUT (outcome unknown).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'positive'),
});

export const WRITE_ANSWER_AT_COMMIT = defineFlag({
  name: 'tablet_write_answer_at_commit',
  type: 'bool',
  default: false,
  help: 'A leader answers a plain write once its entry is Raft-committed (durable on a majority) instead of after its local apply, when the apply stage is busy; reads that name no time then wait for the apply of every write already answered (docs/raft-write-path.md). Row latches are held until the apply either way. Off by default: no gain measured on a quiet machine, and with it on a leader with a slow apply no longer slows its writes (the slow-leader lab experiment shows the default).',
  tags: [FlagTag.runtime],
});

export const LOG_MIN_ENTRIES_TO_RETAIN = defineFlag({
  name: 'log_min_entries_to_retain',
  type: 'int',
  default: 2000,
  help: 'Raft log GC keeps at least this many entries below the databases\' flushed frontier so slightly lagging followers catch up from the log instead of a snapshot.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'non-negative'),
});

export const RETRYABLE_REQUEST_TIMEOUT_SECS = defineFlag({
  name: 'retryable_request_timeout_secs',
  type: 'int',
  default: 660,
  help: 'How long a tablet remembers the writes of a client that sends no more (retryable requests); a client resends a write for at most its deadline, which must stay below this.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'at least 1 s'),
});

export const LOG_GC_INTERVAL_MS = defineFlag({
  name: 'log_gc_interval_ms',
  type: 'int',
  default: 30_000,
  help: 'How often each tablet flushes its databases and garbage-collects its Raft log.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 100 ? undefined : 'at least 100 ms'),
});

export const HISTORY_GC_INTERVAL_SEC = defineFlag({
  name: 'history_gc_interval_sec',
  type: 'int',
  default: 300,
  help: "How often each tablet replica garbage-collects RegularDB's old versions: those older than timestamp_history_retention_interval_sec that no read can see (one tablet at a time; a tablet with nothing written since its last cutoff, or with no version older than the cutoff, is skipped). Reads below a tablet's history cutoff then fail SNAPSHOT_TOO_OLD. 0: never.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'a non-negative number of seconds'),
});

/** Dangerous: a replica stores a wrong value (silent corruption until check_replicas finds it). */
export const TEST_CORRUPT_TABLET_REPLICA = defineFlag({
  name: 'TEST_corrupt_tablet_replica',
  type: 'string',
  default: '',
  help: "Tablet id (or '*': every tablet) whose replica on this server silently writes one wrong value: the next applied write that sets a column stores it changed (a string gets '#corrupt' appended, a number 1 added, a boolean flipped, bytes one byte more) in this replica only — a plain write in its RegularDB, a transactional one in its provisional record in IntentsDB (and so in RegularDB once applied) — as a bad disk or a state-machine bug would; the Raft log stays right. The flag clears itself once done. `tessera admin check_replicas` finds it. (For testing only!)",
  tags: [FlagTag.runtime, FlagTag.dangerous],
});

export const HISTORY_GC_MIN_NEW_VERSIONS_PCT = defineFlag({
  name: 'history_gc_min_new_versions_pct',
  type: 'int',
  default: 10,
  help: "A tablet's history GC pass reads every version of the tablet, so a pass is skipped while the versions written between the last pass's cutoff and this one's are fewer than this percentage of the versions that pass kept (only those can have made older ones collectable); every 12th pass runs anyway (TTL expiry collects without new writes). 0: run whenever anything was written since the last cutoff.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 && v <= 1000 ? undefined : 'a percentage from 0 to 1000'),
});

export const REMOTE_BOOTSTRAP_CHUNK_BYTES = defineFlag({
  name: 'remote_bootstrap_chunk_bytes',
  type: 'int',
  default: 1 << 20,
  help: 'Bytes of key/values per FetchSnapshotChunk response during remote bootstrap.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1024 && v <= 32 << 20 ? undefined : 'between 1 KiB and 32 MiB'),
});

export const TEST_DROP_RAFT_MESSAGES_PROBABILITY = defineFlag({
  name: 'TEST_drop_raft_messages_probability',
  type: 'double',
  default: 0,
  help: 'Probability of dropping each outgoing and incoming Raft message. (For testing only!)',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 && v <= 1 ? undefined : 'between 0 and 1'),
});

export const TEST_FOLLOWER_REJECT_UPDATE_CONSENSUS_REQUESTS = defineFlag({
  name: 'TEST_follower_reject_update_consensus_requests',
  type: 'bool',
  default: false,
  help: 'Followers drop every incoming append (UpdateConsensus) request. (For testing only!)',
  tags: [FlagTag.runtime],
});

export const TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS = defineFlag({
  name: 'TEST_inject_sleep_before_applying_write_batch_ms',
  type: 'int',
  default: 0,
  help: 'Sleep before applying each write batch on this server\'s replicas (delays only that tablet\'s apply stage). (For testing only!)',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'non-negative'),
});

/** Dangerous: set with '*' on every tserver it fails every copy of every tablet at once. */
export const TEST_FAIL_TABLET_REPLICA = defineFlag({
  name: 'TEST_fail_tablet_replica',
  type: 'string',
  default: '',
  help: "Tablet id (or '*': every tablet) whose replica on this server fails at its next applied Raft entry, as a storage failure would: it stops serving and leaves Raft, and the master replaces it (elsewhere, or a fresh copy in place). (For testing only!)",
  tags: [FlagTag.runtime, FlagTag.dangerous],
});

export const SPLIT_HARD_LINKS = defineFlag({
  name: 'tablet_split_hard_links',
  type: 'bool',
  default: true,
  help: "A split child's RegularDB is a checkpoint of its parent's (RocksDB table files hard-linked; the parent's other rows hidden, then deleted in the background), so a split's time does not grow with the tablet's size. false: copy the child's rows instead (docs/splitting.md).",
  tags: [FlagTag.runtime],
});
