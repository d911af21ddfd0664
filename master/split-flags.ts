/**
 * Tablet splitting flags (YugabyteDB's names and phases, lab-sized defaults; docs/splitting.md).
 * Automatic splitting: while a table has fewer than low_phase_shard_count_per_node tablets per live
 * tserver, a tablet splits past the low-phase threshold; after that, past the (larger) threshold.
 */
import { defineFlag, FlagTag } from '../common/flags';

export const ENABLE_AUTOMATIC_TABLET_SPLITTING = defineFlag({
  name: 'enable_automatic_tablet_splitting',
  type: 'bool',
  default: false,
  help: 'The master splits tablets that grow past the size thresholds (docs/splitting.md). YugabyteDB default true; lab default false.',
  tags: [FlagTag.runtime],
});

export const TABLET_SPLIT_SIZE_THRESHOLD_BYTES = defineFlag({
  name: 'tablet_split_size_threshold_bytes',
  type: 'int',
  default: 64 << 20,
  help: 'High phase: a tablet whose leader reports more RegularDB bytes (memtable + SST) than this splits.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1024 ? undefined : 'at least 1024'),
});

export const TABLET_SPLIT_LOW_PHASE_SIZE_THRESHOLD_BYTES = defineFlag({
  name: 'tablet_split_low_phase_size_threshold_bytes',
  type: 'int',
  default: 8 << 20,
  help: 'Low phase: the size threshold while the table has few tablets per tserver (YugabyteDB default 512 MiB).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1024 ? undefined : 'at least 1024'),
});

export const TABLET_SPLIT_LOW_PHASE_SHARD_COUNT_PER_NODE = defineFlag({
  name: 'tablet_split_low_phase_shard_count_per_node',
  type: 'int',
  default: 8,
  help: 'The low phase lasts while a table has fewer tablets than this many per live tserver (YugabyteDB default 8).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 0 ? undefined : 'at least 0'),
});

export const TABLET_SPLIT_LIMIT_PER_TABLE = defineFlag({
  name: 'tablet_split_limit_per_table',
  type: 'int',
  default: 256,
  help: 'Automatic splitting stops at this many tablets per table.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 256 ? undefined : 'between 1 and 256'),
});

export const OUTSTANDING_TABLET_SPLIT_LIMIT = defineFlag({
  name: 'outstanding_tablet_split_limit',
  type: 'int',
  default: 4,
  help: 'Automatic splits under way at once, cluster-wide (several tablets over the threshold split together; one tablet splits once at a time).',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 64 ? undefined : 'between 1 and 64'),
});
