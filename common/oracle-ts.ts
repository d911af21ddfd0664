/**
 * Timestamp-oracle timestamps (master/timestamp-oracle.ts): (wall ms << 18) | logical, as TiKV's
 * TSO, so a timestamp tells roughly when it was handed out (Percolator's lock and version ages).
 */
export const ORACLE_LOGICAL_BITS = 18n;

export function tsFromWallMs(ms: number): bigint {
  return BigInt(Math.floor(ms)) << ORACLE_LOGICAL_BITS;
}

export function wallMsOfTs(ts: bigint): number {
  return Number(ts >> ORACLE_LOGICAL_BITS);
}
