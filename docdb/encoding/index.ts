/**
 * docdb/encoding: the pure byte layout of DocDB keys and values (no I/O). See docdb/README.md §Encoding for the
 * tag table and the order each encoding preserves.
 */
export * from './types';
export * from './byte-buffer';
export * from './tags';
export * from './ordered-varint';
export * from './primitive';
export * from './doc-key';
export * from './doc-hybrid-time';
export * from './sub-doc-key';
export * from './intent-types';
export * from './value';

import { Tag } from './tags';
/** Alias kept for the storage layer, which names the intent-type-set tag this way. */
export const INTENT_TYPE_SET_TAG = Tag.INTENT_TYPE_SET;
