/**
 * How much a write request carries: one Write RPC (a batch of rows, or coalesced writes) holds at
 * most WRITE_BYTES_PER_RPC_MAX of values, measured with approxOpBytes before it is encoded.
 */
import type { RowOpPB } from '../rpc';

/**
 * Value bytes per write RPC at most (a chunk closes before a row that would pass it; a single larger
 * row goes alone). Keeps each Raft entry and frame far below the 64 MiB message limit when rows are
 * large (the experiment's 1 MiB rows: 4 per RPC).
 */
export const WRITE_BYTES_PER_RPC_MAX = 4 * 1024 * 1024;

/** Approximate wire bytes of one row op (values dominate; a small constant covers key and framing). */
export function approxOpBytes(op: RowOpPB): number {
  let n = 32;
  for (const c of op.columns ?? []) {
    const v = c.value;
    if (!v) continue;
    if (typeof v.stringValue === 'string') n += v.stringValue.length * 3 > 1024 ? Buffer.byteLength(v.stringValue) : v.stringValue.length * 3;
    else if (v.bytesValue) n += v.bytesValue.length;
    else if (v.utf8Value) n += v.utf8Value.length;
    else n += 9;
  }
  return n;
}
