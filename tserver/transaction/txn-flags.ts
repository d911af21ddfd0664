/** Flags of the transaction coordinator (status tablets) and participants (YugabyteDB spellings). */
import { defineFlag, FlagTag } from '../../common/flags';

/** The participant's flags live with the tablet (it reads them); named here too, with the rest. */
export { ENABLE_WAIT_QUEUES, TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS, WAIT_QUEUE_POLL_INTERVAL_MS } from '../tablet/participant/participant-flags';

const nonNegative = (v: number): string | undefined => (v >= 0 ? undefined : 'non-negative');

export const TRANSACTION_HEARTBEAT_USEC = defineFlag({
  name: 'transaction_heartbeat_usec',
  type: 'int',
  default: 500_000,
  help: 'Interval at which a transaction client heartbeats its status tablet.',
  tags: [FlagTag.runtime],
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS = defineFlag({
  name: 'transaction_max_missed_heartbeat_periods',
  type: 'int',
  default: 10,
  help: 'A pending transaction whose last heartbeat is older than this many heartbeat periods is aborted.',
  tags: [FlagTag.runtime],
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const TRANSACTION_CHECK_INTERVAL_MS = defineFlag({
  name: 'transaction_check_interval_ms',
  type: 'int',
  default: 500,
  help: 'How often a status tablet leader looks for expired transactions and a participant leader for aborted intents.',
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const TRANSACTION_RESEND_APPLYING_INTERVAL_MS = defineFlag({
  name: 'transaction_resend_applying_interval_ms',
  type: 'int',
  default: 1000,
  help: 'How often a status tablet leader resends APPLY/REMOVE to participants that did not acknowledge.',
  tags: [FlagTag.runtime],
  validate: (v) => (v > 0 ? undefined : 'positive'),
});

export const TRANSACTION_FORGET_DELAY_MS = defineFlag({
  name: 'transaction_forget_delay_ms',
  type: 'int',
  default: 100,
  help: 'How long a status tablet leader collects transactions whose participants all applied (or removed) them before one FORGOTTEN entry drops all their records (0: at once). Until then a record still answers COMMITTED or ABORTED.',
  tags: [FlagTag.runtime],
  validate: nonNegative,
});

/** Dangerous: committed transactions are lost on the tablets that skip the apply (issue 61's example). */
export const TEST_TRANSACTION_IGNORE_APPLYING_PROBABILITY = defineFlag({
  name: 'TEST_transaction_ignore_applying_probability',
  type: 'double',
  default: 0,
  help:
    'A participant leader acknowledges UpdateTransaction APPLY without applying, with this probability. The coordinator then forgets the transaction, so its intents on that tablet later read as aborted and are swept: committed data is lost there. (For testing only!)',
  tags: [FlagTag.runtime, FlagTag.dangerous],
  validate: (v) => (v >= 0 && v <= 1 ? undefined : 'between 0 and 1'),
});

export const TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS = defineFlag({
  name: 'TEST_disable_apply_committed_transactions',
  type: 'bool',
  default: false,
  help: 'The coordinator never sends APPLY to participants. (For testing only!)',
  tags: [FlagTag.runtime],
});

export const TEST_INJECT_TXN_GET_STATUS_DELAY_MS = defineFlag({
  name: 'TEST_inject_txn_get_status_delay_ms',
  type: 'int',
  default: 0,
  help: 'Delay every GetTransactionStatus answer of this server. (For testing only!)',
  tags: [FlagTag.runtime],
  validate: nonNegative,
});

export const TEST_FAIL_BEFORE_COMMIT_MS = defineFlag({
  name: 'TEST_fail_before_commit_ms',
  type: 'int',
  default: 0,
  help: 'The coordinator delays CommitTransaction handling by this many ms (the transaction stays pending with its intents). (For testing only!)',
  tags: [FlagTag.runtime],
  validate: nonNegative,
});

export const ENABLE_TXN_FAST_PATH = defineFlag({
  name: 'enable_txn_fast_path',
  type: 'bool',
  default: true,
  help:
    "Single-tablet transactions (YugabyteDB's fast path, TiKV's 1PC): a transaction whose deferred writes all fall in this tablet commits as one Raft entry straight into RegularDB, with the distributed path's conflict rules and no intents. Off: such a commit is refused with NOT_SUPPORTED and the client commits through the status tablet (A/B).",
  tags: [FlagTag.runtime],
});

export const TXN_FAST_PATH_ONE_ENTRY = defineFlag({
  name: 'txn_fast_path_one_entry',
  type: 'bool',
  default: false,
  help: 'Fast-path commits that a client coalesced into one Write RPC share ONE Raft entry (each checked and answered on its own; tserver/tablet/fast-path-batch.ts) instead of one entry each. Off by default: it cut the Raft entries per 2-row transaction from 3.0 to 1.7 but no CPU or throughput gain was measured (bench/results/2026-12-08-txn-cost-11.md).',
  tags: [FlagTag.runtime],
});

export const TXN_COALESCE_APPLIES = defineFlag({
  name: 'txn_coalesce_applies',
  type: 'bool',
  default: true,
  help: "A participant leader holds the APPLYs that arrive while its tablet's Raft awaits an fsync and proposes them as one entry in the next round (the round they would have had). Off: one APPLY entry per UpdateTransaction request (A/B).",
  tags: [FlagTag.runtime],
});

export const TXN_STATUS_AT_RAFT_COMMIT = defineFlag({
  name: 'txn_status_at_raft_commit',
  type: 'bool',
  default: true,
  help: "A status tablet leader puts a COMMITTED record in force (status answers, the client's answer, the APPLYs to the participants) as soon as its entry is Raft-committed (durable on a majority), not after its own apply. Off: only when that apply would wait behind others and tablet_write_answer_at_commit is on (A/B; docs/transactions.md).",
  tags: [FlagTag.runtime],
});

export const TXN_APPLY_PROPOSE_DURING_SYNC = defineFlag({
  name: 'txn_apply_propose_during_sync',
  type: 'bool',
  default: true,
  help: "With txn_coalesce_applies: a participant leader whose Raft awaits an fsync proposes the APPLYs that arrived in one event-loop iteration at once, so the followers persist the entry during that fsync; off: they are held until the fsync ends and go in the next Ready (fewer entries, one fsync later; A/B).",
  tags: [FlagTag.runtime],
});

export const TXN_LOCAL_UPDATES = defineFlag({
  name: 'txn_local_updates',
  type: 'bool',
  default: true,
  help: 'A status tablet leader hands APPLY/REMOVE to a participant tablet whose leader is on the same server in-process instead of by an UpdateTransaction RPC to itself (A/B).',
  tags: [FlagTag.runtime],
});

export const TXN_LAZY_STATUS_RECORD = defineFlag({
  name: 'txn_lazy_status_record',
  type: 'bool',
  // Off by default: on a loaded 2-core machine fewer RPCs, frames and fsyncs per transaction did not
  // give a higher rate (bench/results/2026-12-07-txn-cost-10.md); to be decided on a quiet machine.
  default: false,
  help: "CreateTransaction tells clients they may start later transactions without it: the transaction id carries its start time, priority and isolation, and its record is created by its first commit or heartbeat (a status query for a young id without a record answers PENDING). Off (default): every transaction begins with CreateTransaction (A/B; docs/transactions.md). Ids started lazily are handled either way.",
  tags: [FlagTag.runtime],
});
