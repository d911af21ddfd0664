/**
 * MVCC resolution for one row (pure): given every version of every sub-key of one DocKey — committed
 * ones from RegularDB, committed-but-unapplied intents (already mapped to their commit time) and the
 * reading transaction's own intents — decide what the row looks like at `readHt`.
 *
 * Rules (YugabyteDB's document model, docs/architecture.md §DocDB):
 * - per sub-key (row level, liveness, each column) the newest visible version wins; "newest" orders by
 *   (own-txn first, hybrid time, write id), so a transaction always sees its own latest write;
 * - a row-level tombstone shadows every sub-key version older than itself;
 * - a column tombstone or an expired TTL reads as null / absent;
 * - the row exists iff its liveness column is live or some column holds a non-null value;
 * - versions of a dropped column (an id not in `schemaColumns`, when given) count for nothing — not for
 *   the row's existence, its write time or a restart — so GC deleting them (gc.ts) changes no read;
 * - another writer's version in (readHt, globalLimitHt] is uncertain: the caller must restart the read
 *   at that time (READ_RESTART), because our clock may lag the writer's by up to the skew bound.
 */
import { htAddMicros, type HybridTime } from '../common/hybrid-time';
import type { DocKey, Primitive, Row, StoredValue, SubKind } from './doc-db-api';

export type { StoredValue, SubKind } from './doc-db-api';

export interface CellVersion {
  sub: SubKind;
  ht: HybridTime;
  writeId: number;
  /** 1 = the reading transaction's own intent (always visible, beats committed data). */
  own: boolean;
  value: StoredValue;
}

export type AssembleResult = { type: 'row'; row: Row } | { type: 'absent' } | { type: 'restart'; restartHt: HybridTime };

function newer(a: CellVersion, b: CellVersion): boolean {
  if (a.own !== b.own) return a.own;
  if (a.ht !== b.ht) return a.ht > b.ht;
  return a.writeId > b.writeId;
}

export function isExpired(v: StoredValue, writeHt: HybridTime, readHt: HybridTime): boolean {
  if (v.type === 'tombstone' || v.type === 'versionTombstone' || v.ttlMs === undefined) return false;
  return readHt >= htAddMicros(writeHt, BigInt(v.ttlMs) * 1000n);
}

/**
 * Cell-model rules a row read applies (docs/cells.md): the TTL in ms of columns whose family has one
 * and keeps no version past it (MIN_VERSIONS 0) — the newest version of such a column reads as absent
 * once older than that, as history GC then deletes it.
 */
export type ColumnTtls = ReadonlyMap<number, number>;

/** Drop version tombstones and the versions they mask (same sub-key, same hybrid time; docs/cells.md). */
function withoutVersionDeletes(versions: readonly CellVersion[], readHt: HybridTime): readonly CellVersion[] {
  let marks: Set<string> | undefined;
  for (const v of versions) {
    if (v.value.type === 'versionTombstone' && (v.own || v.ht <= readHt)) (marks ??= new Set()).add(`${subId(v.sub)}@${v.ht}`);
  }
  if (marks === undefined) return versions;
  const m = marks;
  return versions.filter((v) => v.value.type !== 'versionTombstone' && !(v.value.type === 'primitive' && m.has(`${subId(v.sub)}@${v.ht}`)));
}

function subId(s: SubKind): string {
  return s.kind === 'column' ? `c${s.id}` : s.kind;
}

export function assembleRow(
  key: DocKey,
  versions: readonly CellVersion[],
  readHt: HybridTime,
  globalLimitHt: HybridTime | undefined,
  columns?: readonly number[],
  /** The column ids of the table's current schema (undefined: no column was ever dropped). */
  schemaColumns?: ReadonlySet<number>,
  /** Filled with each returned column's version time (scan filters see it as the cell's timestamp). */
  cellHts?: Map<number, HybridTime>,
  columnTtls?: ColumnTtls,
): AssembleResult {
  let restartHt: HybridTime | undefined;
  const best = new Map<string, CellVersion>();
  for (const v of withoutVersionDeletes(versions, readHt)) {
    if (schemaColumns !== undefined && v.sub.kind === 'column' && !schemaColumns.has(v.sub.id)) continue;
    if (!v.own && v.ht > readHt) {
      if (globalLimitHt !== undefined && v.ht <= globalLimitHt && (restartHt === undefined || v.ht > restartHt)) restartHt = v.ht;
      continue;
    }
    const id = subId(v.sub);
    const cur = best.get(id);
    if (cur === undefined || newer(v, cur)) best.set(id, v);
  }
  if (restartHt !== undefined) return { type: 'restart', restartHt };

  const tomb = best.get('row');
  const familyExpired = (v: CellVersion): boolean => {
    const ttl = v.sub.kind === 'column' ? columnTtls?.get(v.sub.id) : undefined;
    return ttl !== undefined && readHt >= htAddMicros(v.ht, BigInt(ttl) * 1000n);
  };
  const live = (v: CellVersion | undefined): v is CellVersion =>
    v !== undefined && !(tomb !== undefined && tomb.value.type === 'tombstone' && newer(tomb, v)) && !isExpired(v.value, v.ht, readHt) && !familyExpired(v);

  let exists = false;
  let writeHt: HybridTime = 0n;
  const liveness = best.get('liveness');
  if (live(liveness) && liveness.value.type === 'liveness') {
    exists = true;
    writeHt = liveness.ht;
  }
  const cols = new Map<number, Primitive>();
  for (const v of best.values()) {
    if (v.sub.kind !== 'column' || !live(v)) continue;
    // A large string's bytes (utf8) answer "not null" without decoding it (docdb/encoding/value.ts).
    if (v.value.type === 'primitive' && (v.value.utf8 !== undefined || v.value.value !== null)) {
      exists = true;
      if (columns === undefined || columns.includes(v.sub.id)) {
        cols.set(v.sub.id, v.value.value);
        cellHts?.set(v.sub.id, v.ht);
      }
    }
    if (v.ht > writeHt) writeHt = v.ht;
  }
  if (!exists) return { type: 'absent' };
  return { type: 'row', row: { key, columns: cols, writeHt } };
}
