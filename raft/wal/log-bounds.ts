/**
 * Shared LogStorage rules: the errors for compacted and unavailable indexes, and the byte limit of
 * entries() (etcd's limitSize: the longest prefix within the limit, but never empty).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Entry } from '../types';

export function compactedError(index: number, firstIndex: number): DbError {
  return new DbError(ErrorCode.NOT_FOUND, `log index ${index} is compacted (first index ${firstIndex})`, { compacted: true, index, firstIndex });
}

export function unavailableError(index: number, lastIndex: number): DbError {
  return new DbError(ErrorCode.NOT_FOUND, `log index ${index} is not yet available (last index ${lastIndex})`, { unavailable: true, index, lastIndex });
}

export function snapshotOutOfDateError(index: number, current: number): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, `snapshot at index ${index} is older than the current one at ${current}`, { outOfDate: true, index, current });
}

/** Bytes an entry counts for against a byte limit: its payload plus a fixed header. */
export const ENTRY_OVERHEAD_BYTES = 24;
export function entryBytes(e: Entry): number {
  return e.data.byteLength + ENTRY_OVERHEAD_BYTES;
}

/** The longest prefix of `ents` whose total size is <= bytesMax, and at least one entry. */
export function limitBytes(ents: Entry[], bytesMax: number | undefined): Entry[] {
  if (bytesMax === undefined || ents.length <= 1) return ents;
  let total = entryBytes(ents[0]!);
  let n = 1;
  while (n < ents.length) {
    total += entryBytes(ents[n]!);
    if (total > bytesMax) break;
    n++;
  }
  return n === ents.length ? ents : ents.slice(0, n);
}
