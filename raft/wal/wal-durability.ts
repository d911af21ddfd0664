/**
 * How far a Raft log append must get before sync() resolves — HBase's per-table WAL durability in
 * tessera's words (HBASE-5954; HDFS hflush vs hsync):
 *   ASYNC  acknowledged before the record reaches the OS: held in memory, written and fdatasynced by a
 *          background flush every interval_durable_wal_write_ms. A process crash loses that window.
 *   FLUSH  written to the OS (write(2)) before acknowledgement, fdatasynced in the background: survives
 *          a process crash (kill -9), not a power loss (HDFS hflush).
 *   FSYNC  fdatasync before acknowledgement, the default (HDFS hsync).
 * Term, vote and configuration (the consensus metadata file) are fsynced before sync() resolves under
 * every level: a replica never forgets a vote it gave, only log entries it acknowledged.
 */
import { DbError, ErrorCode } from '../../common/errors';

export const WalDurability = { ASYNC: 'ASYNC', FLUSH: 'FLUSH', FSYNC: 'FSYNC' } as const;
export type WalDurability = (typeof WalDurability)[keyof typeof WalDurability];

export const WAL_DURABILITY_LEVELS: readonly WalDurability[] = [WalDurability.ASYNC, WalDurability.FLUSH, WalDurability.FSYNC];

export const DEFAULT_WAL_DURABILITY: WalDurability = WalDurability.FSYNC;

export function isWalDurability(s: unknown): s is WalDurability {
  return typeof s === 'string' && (WAL_DURABILITY_LEVELS as readonly string[]).includes(s);
}

/** A level from user input (case-insensitive); INVALID_ARGUMENT naming the levels otherwise. */
export function parseWalDurability(s: string): WalDurability {
  const up = s.trim().toUpperCase();
  if (isWalDurability(up)) return up;
  throw new DbError(ErrorCode.INVALID_ARGUMENT, `durability '${s}' is not one of ${WAL_DURABILITY_LEVELS.join(', ')}`, { durability: s });
}

/** The weaker of two levels (durable_wal_write=false caps every log at FLUSH, as it always did). */
export function weakerDurability(a: WalDurability, b: WalDurability): WalDurability {
  return WAL_DURABILITY_LEVELS.indexOf(a) <= WAL_DURABILITY_LEVELS.indexOf(b) ? a : b;
}
