/** Flags of the single-row operations and row locks (docs/rows.md). */
import { defineFlag, FlagTag } from '../../common/flags';

export const ROW_LOCK_LEASE_MS = defineFlag({
  name: 'row_lock_lease_ms',
  type: 'int',
  default: 60_000,
  help: "Lease of a row lock whose lockRow names none (HBase's hbase.regionserver.lease.period): past it, measured in the tablet's hybrid time, the lock is released and writes carrying it are FENCED.",
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 && v <= 3_600_000 ? undefined : 'between 1 ms and one hour'),
});

export const ROW_CELL_BYTES_MAX = defineFlag({
  name: 'row_cell_bytes_max',
  type: 'int',
  default: 4 * 1024 * 1024,
  help: 'Largest value (bytes of a string or bytes cell) an append may leave in a cell; a larger one fails with VALUE_TOO_LARGE, nothing written.',
  tags: [FlagTag.runtime],
  validate: (v) => (v >= 1 ? undefined : 'positive'),
});
