/** Flags of the transaction participant that the tablet reads (YugabyteDB spellings); tserver/transaction/txn-flags.ts names them too. */
import { defineFlag, FlagTag } from '../../../common/flags';

const nonNegative = (v: number): string | undefined => (v >= 0 ? undefined : 'non-negative');

export const ENABLE_WAIT_QUEUES = defineFlag({
  name: 'enable_wait_queues',
  type: 'bool',
  default: false,
  help:
    "Wait-on-conflict (YugabyteDB's wait queues): a transaction that meets a pending transaction it does not outrank (priority, then id) waits on this tablet for it to finish, instead of failing with TXN_CONFLICT; one that outranks it still aborts it (wound-wait: waits only ever go to higher ranks, so no deadlock). Off: fail-on-conflict.",
  tags: [FlagTag.runtime],
});

export const WAIT_QUEUE_POLL_INTERVAL_MS = defineFlag({
  name: 'wait_queue_poll_interval_ms',
  type: 'int',
  default: 100,
  help: 'A waiting transaction re-checks its blockers at least this often (besides being woken when this tablet applies or removes one of them).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 60_000 ? undefined : 'between 1 and 60000'),
});

export const TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS = defineFlag({
  name: 'TEST_inject_sleep_before_applying_intents_ms',
  type: 'int',
  default: 0,
  help: "Sleep before applying a committed transaction's intents on this server's replicas (delays only that tablet's apply stage). (For testing only!)",
  tags: [FlagTag.runtime],
  validate: nonNegative,
});
