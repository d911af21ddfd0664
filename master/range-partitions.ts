/**
 * Range partitions of a range-sharded table (docs/splitting.md), pure: split points given at create
 * time become N+1 contiguous key ranges; a hash table keeps its hash ranges. Partitions go on the wire
 * with their key bounds as bytes (the catalog keeps them as hex: it is replicated as JSON).
 */
import { bytesOfHex, compareKeyBytes, hexOf } from '../common/key-bounds';
import { DbError, ErrorCode } from '../common/errors';
import type { PartitionPB } from '../rpc';
import { HASH_SPACE, type Partition } from './catalog-types';
import { TABLETS_PER_TABLE_MAX } from './ddl-validation';

/** Bytes one split point has at most (a few leading key components). */
export const SPLIT_KEY_BYTES_MAX = 4096;
/** The lowest byte a range component's encoding starts with (docdb/encoding tags are >= '$'). */
const COMPONENT_TAG_MIN = 0x24;

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

/** N ascending, distinct split points → N+1 partitions covering every key. */
export function rangePartitions(splitKeys: readonly Uint8Array[]): Partition[] {
  if (splitKeys.length + 1 > TABLETS_PER_TABLE_MAX) throw invalid(`${splitKeys.length} split points make more than ${TABLETS_PER_TABLE_MAX} tablets`);
  splitKeys.forEach((k, i) => {
    if (k.length === 0) throw invalid(`split point ${i + 1} is empty`);
    if (k.length > SPLIT_KEY_BYTES_MAX) throw invalid(`split point ${i + 1} is longer than ${SPLIT_KEY_BYTES_MAX} bytes`);
    if (k[0]! < COMPONENT_TAG_MIN) throw invalid(`split point ${i + 1} is not an encoded range key`);
    if (i > 0 && compareKeyBytes(splitKeys[i - 1]!, k) >= 0) throw invalid(`split points must be ascending and distinct (point ${i + 1} is not above point ${i})`);
  });
  const bounds = ['', ...splitKeys.map((k) => hexOf(k)), ''];
  const out: Partition[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const p: Partition = { start: 0, end: HASH_SPACE };
    if (bounds[i]) p.keyStart = bounds[i]!;
    if (bounds[i + 1]) p.keyEnd = bounds[i + 1]!;
    out.push(p);
  }
  return out;
}

export function partitionToPb(p: Partition): PartitionPB {
  return { start: p.start, end: p.end, keyStart: bytesOfHex(p.keyStart), keyEnd: bytesOfHex(p.keyEnd) };
}

/** Whether the table splits by key (range-sharded) rather than by hash. */
export function isRangePartitioned(hashColumns: readonly string[]): boolean {
  return hashColumns.length === 0;
}

/** `any` (or empty) or `prefix:N` with 1 <= N <= the number of range columns; returns the canonical text. */
export function parseSplitPolicy(policy: string | undefined, rangeColumns: number): string | undefined {
  const p = (policy ?? '').trim();
  if (p === '' || p === 'any') return undefined;
  const m = /^prefix:([0-9]{1,3})$/.exec(p);
  if (!m) throw invalid(`split policy '${p}': use any or prefix:N`);
  const n = Number(m[1]);
  if (n < 1 || n > rangeColumns) throw invalid(`split policy prefix:${n}: N must be between 1 and the number of range columns (${rangeColumns})`);
  return `prefix:${n}`;
}

/** The N of a `prefix:N` policy (0: any key). */
export function splitPrefixOf(policy: string | undefined): number {
  const m = /^prefix:([0-9]+)$/.exec(policy ?? '');
  return m ? Number(m[1]) : 0;
}
