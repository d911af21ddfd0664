/**
 * The values, keys and isolation levels the encoding works on. A leaf: docdb/encoding/ stands alone
 * (like YugabyteDB's dockv) and doc-db-api.ts re-exports these for the rest of DocDB.
 */
/** A column or key value. bigint = int64, number = double, Uint8Array = bytes. */
export type Primitive = null | boolean | bigint | number | string | Uint8Array;

export interface DocKey {
  /** 16-bit partition hash of the hashed components (0 when the table has no hash columns). */
  hash: number;
  hashed: Primitive[];
  range: Primitive[];
}

export const Isolation = { SNAPSHOT: 'snapshot', SERIALIZABLE: 'serializable' } as const;
export type Isolation = (typeof Isolation)[keyof typeof Isolation];
