/**
 * Reading a table's WAL archive back as writes (`tessera admin replay-wal`, docs/backup.md; HBase's
 * WALPlayer). Per tablet, the archived segments of every replica are merged by log index (a higher
 * term wins, as Raft's log matching would), decoded with the log's own reader (raft/wal) and the
 * tablet's op decoder, and turned into row writes in log order:
 * - WRITE: each row op at the entry's hybrid time;
 * - WRITE_INTENTS are held per transaction and written at APPLY_TXN(S) at the commit time; a
 *   REMOVE_TXN (aborted) drops them;
 * - CHANGE_SCHEMA updates the column-id → name map; cell ops (explicit timestamps) are counted, not
 *   replayed.
 * A hole in the merged indexes (a segment no replica archived) is CORRUPTION: the replay would miss
 * writes. Memory: one tablet's archived entries at a time.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import type { Primitive, RowOp } from '../docdb';
import { parseSegmentName, readSegmentEntries, type Entry } from '../raft';
import { decodeTabletOp } from './tablet/tablet-op';
import { parseTableSchema, type TableSchema } from './tablet/tablet-meta';
import { ARCHIVE_SCHEMA_FILE } from './wal-archive';

export interface ReplayWrite {
  ht: bigint;
  type: 'upsert' | 'delete';
  /** Key columns and (upsert) the written columns, by name. */
  row: Record<string, Primitive>;
}

export interface ReplayStats {
  tablets: number;
  entries: number;
  writes: number;
  /** Writes of transactions (applied at their commit time). */
  txnWrites: number;
  /** Cell ops (HBase-style writes at explicit timestamps): not replayed. */
  cellOpsSkipped: number;
  /** Transactions whose intents were archived without their APPLY (not committed, or applied in an unarchived segment). */
  txnsUnfinished: number;
}

function tabletEntries(tabletDir: string): Entry[] {
  const byIndex = new Map<number, Entry>();
  for (const replica of fs.readdirSync(tabletDir, { withFileTypes: true })) {
    if (!replica.isDirectory()) continue;
    const dir = path.join(tabletDir, replica.name);
    const segs = fs.readdirSync(dir).map((n) => ({ n, seq: parseSegmentName(n) })).filter((x) => x.seq !== undefined).sort((a, b) => a.seq! - b.seq!);
    for (const s of segs) {
      for (const e of readSegmentEntries(path.join(dir, s.n))) {
        const have = byIndex.get(e.index);
        if (!have || have.term < e.term) byIndex.set(e.index, e);
      }
    }
  }
  const out = [...byIndex.values()].sort((a, b) => a.index - b.index);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.index !== out[i - 1]!.index + 1) throw new DbError(ErrorCode.CORRUPTION, `${tabletDir}: the archive has a hole: entries ${out[i - 1]!.index + 1}..${out[i]!.index - 1} are in no archived segment (a copy failed, or archiving started late)`, { tabletDir, from: out[i - 1]!.index + 1, to: out[i]!.index - 1 });
  }
  return out;
}

function rowOf(schema: TableSchema, op: RowOp): Record<string, Primitive> {
  const row: Record<string, Primitive> = {};
  schema.hashColumns.forEach((c, i) => (row[c] = op.key.hashed[i] ?? null));
  schema.rangeColumns.forEach((c, i) => (row[c] = op.key.range[i] ?? null));
  if (op.type === 'upsert') {
    for (const w of op.columns) {
      const col = schema.columns.find((c) => c.id === w.columnId);
      // A column dropped since: its values count for nothing, as in a read.
      if (col) row[col.name] = w.value;
    }
  }
  return row;
}

/** The writes of one tablet's archive in log order (a transaction's at its APPLY). */
function* tabletWrites(tabletDir: string, stats: ReplayStats): Generator<ReplayWrite> {
  const schemaFile = path.join(tabletDir, ARCHIVE_SCHEMA_FILE);
  if (!fs.existsSync(schemaFile)) throw new DbError(ErrorCode.CORRUPTION, `${tabletDir}: no ${ARCHIVE_SCHEMA_FILE}: not a tablet's WAL archive`);
  let schema = parseTableSchema((JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as { schema: unknown }).schema);
  const pending = new Map<string, RowOp[]>();
  const writesOf = function* (ops: readonly RowOp[], ht: bigint, txn: boolean): Generator<ReplayWrite> {
    for (const op of ops) {
      if (op.type === 'cells') {
        stats.cellOpsSkipped++;
        continue;
      }
      stats.writes++;
      if (txn) stats.txnWrites++;
      yield { ht, type: op.type, row: rowOf(schema, op) };
    }
  };
  for (const e of tabletEntries(tabletDir)) {
    stats.entries++;
    if (e.type !== 'normal' || e.data.length === 0) continue;
    const op = decodeTabletOp(e.data);
    if (op.type === 'WRITE') yield* writesOf(op.ops, op.ht, false);
    else if (op.type === 'WRITE_INTENTS') pending.set(op.txn.txnId, [...(pending.get(op.txn.txnId) ?? []), ...op.ops]);
    else if (op.type === 'APPLY_TXN' || op.type === 'APPLY_TXNS') {
      for (const t of op.type === 'APPLY_TXN' ? [op] : op.txns) {
        const ops = pending.get(t.txnId);
        pending.delete(t.txnId);
        if (ops) yield* writesOf(ops, t.commitHt, true);
      }
    } else if (op.type === 'REMOVE_TXN') pending.delete(op.txnId);
    else if (op.type === 'CHANGE_SCHEMA') schema = op.schema;
  }
  stats.txnsUnfinished += pending.size;
}

/** Every archived write of `table` under `archiveDir`, tablet by tablet; `stats` fills as it goes. */
export function* readTableArchive(archiveDir: string, table: string, stats: ReplayStats): Generator<ReplayWrite> {
  const dir = path.join(archiveDir, table);
  if (!fs.existsSync(dir)) throw new DbError(ErrorCode.NOT_FOUND, `${archiveDir} holds no WAL archive of table ${table} (tables there: ${fs.existsSync(archiveDir) ? fs.readdirSync(archiveDir).join(', ') || 'none' : 'none'})`);
  for (const t of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!t.isDirectory()) continue;
    stats.tablets++;
    yield* tabletWrites(path.join(dir, t.name), stats);
  }
}

export function emptyReplayStats(): ReplayStats {
  return { tablets: 0, entries: 0, writes: 0, txnWrites: 0, cellOpsSkipped: 0, txnsUnfinished: 0 };
}
