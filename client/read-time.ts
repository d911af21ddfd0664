/**
 * The read time a client read sends and what a READ_RESTART answer carries back (see table.ts on
 * read restarts and tserver/tablet/participant/uncertainty.ts on the uncertainty window).
 */
import { DbError, ErrorCode } from '../common/errors';

/** The read time a read sends: readHt 0 = the leader picks; globalLimitHt 0 = no uncertainty window. */
export interface ReadTime {
  readHt: bigint;
  globalLimitHt: bigint;
}
export const SERVER_PICKS: ReadTime = { readHt: 0n, globalLimitHt: 0n };

function htDetail(e: DbError, name: string): bigint {
  const v = e.details[name];
  if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'bigint') return 0n;
  try {
    return BigInt(v);
  } catch {
    return 0n;
  }
}

/** The restart a READ_RESTART error asks for (undefined: another error, or one without a restart time). */
export function restartOf(e: unknown): { readHt: bigint; restartHt: bigint; globalLimitHt: bigint } | undefined {
  if (!(e instanceof DbError) || e.code !== ErrorCode.READ_RESTART) return undefined;
  const restartHt = htDetail(e, 'restartHt');
  if (restartHt <= 0n) return undefined;
  return { readHt: htDetail(e, 'readHt'), restartHt, globalLimitHt: htDetail(e, 'globalLimitHt') };
}

/** A tablet refused a request built with another schema version (withSchema retries the whole operation). */
/**
 * The table changed under the operation and nothing was done: its schema (ALTER TABLE) or its
 * tablets (a split, docs/splitting.md). withSchema loads the table again and runs the operation anew.
 */
export function isSchemaMismatch(e: unknown): boolean {
  return e instanceof DbError && (e.code === ErrorCode.SCHEMA_VERSION_MISMATCH || e.code === ErrorCode.TABLET_SPLIT);
}

/** A transactional scan saw its transaction's read time move under it: read again from the start. */
export function readTimeMoved(usedReadHt: bigint, nowReadHt: bigint): DbError {
  return new DbError(ErrorCode.READ_RESTART, `the transaction's read time moved from ${usedReadHt} to ${nowReadHt} during the scan`, {
    readHt: usedReadHt.toString(),
    restartHt: nowReadHt.toString(),
  });
}
