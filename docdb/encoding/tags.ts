/**
 * Every tag byte of the key encoding in one table (docdb/README.md §Encoding explains each choice).
 *
 * Letters follow YugabyteDB's `value_type.h` where it has them. The invariants the byte order relies on:
 * - GROUP_END '!' (0x21) and HYBRID_TIME '#' (0x23) sort below every component tag, so a key with fewer
 *   components sorts before its extensions, and a row-level version (`DocKey '#' time`) before its
 *   columns (`DocKey 'K' id ...`).
 * - Ascending tags, in increasing byte order, give the cross-type order of `comparePrimitives`:
 *   null < bytes < double < false < int64 < string < true. Descending tags are in exactly the reverse
 *   order, so a descending column reverses the whole order, nulls included (nulls first ascending,
 *   last descending — YugabyteDB's NullLow / NullHigh).
 * - Every tag a DocKey can start with lies in [0x21, 0x78): RegularDB meta keys use bytes below 0x20
 *   and IntentsDB puts transaction records under 'x' (0x78), after every intent.
 */
export const Tag = {
  /** Lowest byte; YugabyteDB kLowest. Used for exclusive-bound tricks, never stored as a component. */
  LOWEST: 0x00,
  /** Precedes the one-byte intent type set in an intent key (YugabyteDB kIntentTypeSet). */
  INTENT_TYPE_SET: 13,
  /** '!' ends the hashed group and the range group of a DocKey (kGroupEnd). */
  GROUP_END: 0x21,
  /** '#' precedes the DocHybridTime at the end of a versioned key (kHybridTime). */
  HYBRID_TIME: 0x23,

  // Ascending primitive tags.
  NULL_LOW: 0x24, // '$'
  BYTES: 0x42, // 'B' (YugabyteDB stores binary as a string; tessera keeps the type)
  DOUBLE: 0x44, // 'D'
  FALSE: 0x46, // 'F'
  INT64: 0x49, // 'I'
  STRING: 0x53, // 'S'
  TRUE: 0x54, // 'T'

  // Descending primitive tags (reverse order of the ascending ones).
  TRUE_DESC: 0x55, // 'U'
  STRING_DESC: 0x61, // 'a' (YugabyteDB kStringDescending)
  INT64_DESC: 0x62, // 'b' (YugabyteDB kInt64Descending)
  FALSE_DESC: 0x63, // 'c'
  DOUBLE_DESC: 0x64, // 'd'
  BYTES_DESC: 0x65, // 'e'
  NULL_HIGH: 0x76, // 'v' (YugabyteDB kNullHigh)

  // Key structure.
  HASH: 0x47, // 'G' + u16 BE partition hash (kUInt16Hash)
  SYSTEM_COLUMN: 0x4a, // 'J' + ordered varint system column id (kSystemColumnId)
  COLUMN_ID: 0x4b, // 'K' + ordered varint column id (kColumnId)
  TRANSACTION_ID: 0x78, // 'x' (IntentsDB transaction records; written by the storage layer)
  HIGHEST: 0x7e, // '~'
} as const;

/** System column ids under SYSTEM_COLUMN ('J'). */
export const SystemColumn = {
  /** The liveness column: makes a row exist even when all its other columns are null. */
  LIVENESS: 0,
} as const;

/** Value tags (values are not ordered; these only need to be distinct). */
export const ValueTag = {
  /** 't' + u64 BE milliseconds: the TTL prefix of a value (YugabyteDB kTtl). */
  TTL: 0x74,
  /** 'X': a tombstone (kTombstone). */
  TOMBSTONE: 0x58,
  /** 'L': the liveness marker written under the liveness system column. */
  LIVENESS: 0x4c,
  /** 'V': a version tombstone — masks the versions of its sub-key at exactly its hybrid time (HBase's Delete of one version; docs/cells.md). */
  VERSION_TOMBSTONE: 0x56,
} as const;
