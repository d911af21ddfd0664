/**
 * upsertMany / deleteMany (table.ts): the rows grouped per tablet as located now, cut into chunks of
 * at most rowsPerRpc rows and WRITE_BYTES_PER_RPC_MAX bytes, one Write RPC each.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { RowOpPB } from '../rpc';
import type { BatchOptions, Row } from './client-types';
import { tabletForRoute, type TableLocations } from './meta-cache';
import { approxOpBytes, WRITE_BYTES_PER_RPC_MAX } from './write-size';

const WRITE_ROWS_PER_RPC_DEFAULT = 1000;
const WRITE_ROWS_PER_RPC_MAX = 10_000;
const BATCH_CONCURRENCY_DEFAULT = 8;
const BATCH_CONCURRENCY_MAX = 256;

/** One row's op and its route; each chunk carries one hash so a split-free relocation routes it. */
export interface ChunkOp {
  hash: number;
  op: RowOpPB;
  key?: Uint8Array | undefined;
}

/** Chunks sent at once at most (o.concurrency, bounded). */
export function batchConcurrency(o: BatchOptions): number {
  return Math.min(BATCH_CONCURRENCY_MAX, Math.max(1, o.concurrency ?? BATCH_CONCURRENCY_DEFAULT));
}

export function writeChunks(loc: TableLocations, type: 'UPSERT' | 'DELETE', rows: readonly Row[], o: BatchOptions, tableName: string): ChunkOp[][] {
  const perRpc = Math.min(WRITE_ROWS_PER_RPC_MAX, Math.max(1, o.rowsPerRpc ?? WRITE_ROWS_PER_RPC_DEFAULT));
  const byTablet = new Map<string, ChunkOp[]>();
  for (const row of rows) {
    const x = loc.schema.rowOp(type, row);
    const t = tabletForRoute(loc, x);
    if (!t) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `no tablet of ${tableName} covers hash ${x.hash}`);
    let g = byTablet.get(t.tabletId);
    if (!g) byTablet.set(t.tabletId, (g = []));
    g.push(x);
  }
  const chunks: ChunkOp[][] = [];
  for (const g of byTablet.values()) {
    let cur: ChunkOp[] = [];
    let bytes = 0;
    for (const x of g) {
      const b = approxOpBytes(x.op);
      if (cur.length > 0 && (cur.length >= perRpc || bytes + b > WRITE_BYTES_PER_RPC_MAX)) {
        chunks.push(cur);
        cur = [];
        bytes = 0;
      }
      cur.push(x);
      bytes += b;
    }
    if (cur.length > 0) chunks.push(cur);
  }
  return chunks;
}
