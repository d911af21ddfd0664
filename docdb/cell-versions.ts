/**
 * HBase's cell model over DocDB's versions (pure; docs/cells.md): which versions of a column a read
 * returns given its family's rules, and which ones history GC may delete.
 *
 * A cell version is a put (a value, maybe a TTL) or a delete marker, at a hybrid time (its HBase
 * timestamp) and a write id. Markers: a column tombstone (DeleteColumn) and a row tombstone
 * (DeleteRow; DeleteFamily is a column tombstone on each column of the family) mask the puts at or
 * before them in (time, write id) order; a version tombstone (Delete of one version) masks the puts at
 * exactly its time.
 *
 * A read at read time R (now, or `asOf`) with a time range [min, max), `versions` n:
 *  1. only versions at or before R exist (a snapshot of the past);
 *  2. raw: every put and marker in the range, newest first, n at most (no masking, no TTL);
 *  3. otherwise the column's RETAINED puts are its newest VERSIONS puts — not counting masked ones,
 *     unless KEEP_DELETED_CELLS (then deleted puts stay, as HBase keeps them for time-range reads);
 *  4. of those, a put past its TTL (the cell's or the family's, the shorter) is dropped unless it is
 *     one of the newest MIN_VERSIONS retained (HBASE-4071);
 *  5. then the time range, then masking: without KEEP_DELETED_CELLS every marker masks; with it only
 *     markers before the range's end (a read of a time before the delete still sees the value,
 *     HBASE-4536);
 *  6. the newest n remain.
 * Retention is counted over all puts, not within the time range, so a compaction never changes what
 * a read at or above its cutoff returns — HBase's own "major compactions change query results"
 * limitation is not reproduced.
 *
 * GC at cutoff C (no read below C is served afterwards; no write lands at or below it): a put at or
 * before C goes when it is not retained at C, or when it and every older retained put are past their
 * TTL beyond MIN_VERSIONS (only an oldest suffix goes, so no kept put changes rank); a marker at or
 * before C goes once it masks no put left.
 */
import type { HybridTime } from '../common/hybrid-time';
import { htAddMicros } from '../common/hybrid-time';
import type { ColumnFamily } from '../common/column-families';
import type { DocKey, Primitive } from './encoding/types';

export type CellKind = 'put' | 'deleteVersion' | 'deleteColumn' | 'deleteRow';

export interface CellEntry {
  kind: CellKind;
  /** Column id; -1 for a row tombstone. */
  columnId: number;
  ht: HybridTime;
  writeId: number;
  value?: Exclude<Primitive, null>;
  ttlMs?: number;
}

/** What a read asks for (docs/cells.md). */
export interface CellReadSpec {
  readHt: HybridTime;
  /** [min, max) of cell timestamps; default everything. */
  minHt?: HybridTime;
  maxHt?: HybridTime;
  /** Versions per column at most (default 1; raw: default all). */
  versions?: number;
  raw?: boolean;
}

export interface CellReadOptions extends CellReadSpec {
  /** Inclusive lower encoded DocKey bound. */
  startKey?: Uint8Array;
  /** Exclusive upper encoded DocKey bound. */
  endKey?: Uint8Array;
  /** Column ids to return (undefined: every column). */
  columns?: readonly number[];
  /** Rows at most (default and cap CELL_READ_ROWS_MAX). */
  limit?: number;
}

export interface CellRow {
  key: DocKey;
  /** Per column in id order, newest first; a raw read's row tombstones have columnId -1. */
  cells: CellEntry[];
}

export interface CellReadResult {
  rows: CellRow[];
  /** Encoded DocKey to resume from when the row or cell limit cut the read short. */
  resumeKey?: Buffer;
}

/** The retention rules the cell model needs of a family. */
export type CellRules = Pick<ColumnFamily, 'versions' | 'minVersions' | 'ttlSec' | 'keepDeletedCells'>;

export const DEFAULT_CELL_RULES: CellRules = { versions: 1, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' };

/** Newest first: by time, then write id. */
export function newerFirst(a: CellEntry, b: CellEntry): number {
  if (a.ht !== b.ht) return a.ht > b.ht ? -1 : 1;
  return b.writeId - a.writeId;
}

function atOrBefore(p: CellEntry, m: CellEntry): boolean {
  return p.ht < m.ht || (p.ht === m.ht && p.writeId <= m.writeId);
}

/** Does marker `m` mask put `p`? */
export function masks(m: CellEntry, p: CellEntry): boolean {
  if (m.kind === 'deleteVersion') return m.ht === p.ht;
  if (m.kind === 'deleteColumn' || m.kind === 'deleteRow') return atOrBefore(p, m);
  return false;
}

/**
 * The markers of a column in a form that answers "is this put masked?" in O(1): the newest column or
 * row tombstone (it masks everything at or before it, so older ones add nothing) and the times of
 * version tombstones. Linear in the markers, so a row with many of them costs no quadratic work.
 */
export class Masks {
  private newestDelete: CellEntry | undefined;
  private readonly versionHts = new Set<HybridTime>();

  add(m: CellEntry): void {
    if (m.kind === 'deleteVersion') this.versionHts.add(m.ht);
    else if (m.kind !== 'put' && (this.newestDelete === undefined || atOrBefore(this.newestDelete, m))) this.newestDelete = m;
  }

  masked(p: CellEntry): boolean {
    return (this.newestDelete !== undefined && atOrBefore(p, this.newestDelete)) || this.versionHts.has(p.ht);
  }
}

function masksOf(entries: readonly CellEntry[], keep: (m: CellEntry) => boolean): Masks {
  const out = new Masks();
  for (const e of entries) if (e.kind !== 'put' && keep(e)) out.add(e);
  return out;
}

/** Past its TTL at `atHt`: the cell's own TTL or the family's, whichever ends first. */
export function expiredAt(p: CellEntry, rules: CellRules, atHt: HybridTime): boolean {
  let ttlMs = p.ttlMs;
  if (rules.ttlSec > 0 && (ttlMs === undefined || rules.ttlSec * 1000 < ttlMs)) ttlMs = rules.ttlSec * 1000;
  if (ttlMs === undefined) return false;
  return atHt >= htAddMicros(p.ht, BigInt(ttlMs) * 1000n);
}

/**
 * The retained puts of one column at `atHt` (newest first): its newest VERSIONS puts, not counting
 * masked ones unless KEEP_DELETED_CELLS. `entries`: the column's versions and the row's tombstones.
 */
export function retainedPuts(entries: readonly CellEntry[], rules: CellRules, atHt: HybridTime): CellEntry[] {
  const keepDeleted = rules.keepDeletedCells !== 'false';
  const markers = keepDeleted ? undefined : masksOf(entries, (m) => m.ht <= atHt);
  const puts = entries.filter((e) => e.kind === 'put' && e.ht <= atHt).sort(newerFirst);
  const out: CellEntry[] = [];
  for (const p of puts) {
    if (out.length >= rules.versions) break;
    if (markers?.masked(p)) continue;
    out.push(p);
  }
  return out;
}

/** The versions of one column a read returns, newest first (see the header). */
export function selectColumnCells(entries: readonly CellEntry[], rules: CellRules, spec: CellReadSpec): CellEntry[] {
  const inRange = (e: CellEntry): boolean => e.ht <= spec.readHt && (spec.minHt === undefined || e.ht >= spec.minHt) && (spec.maxHt === undefined || e.ht < spec.maxHt);
  if (spec.raw) {
    const all = entries.filter(inRange).sort(newerFirst);
    return spec.versions === undefined ? all : all.slice(0, spec.versions);
  }
  const retained = retainedPuts(entries, rules, spec.readHt);
  const keepDeleted = rules.keepDeletedCells !== 'false';
  const markers = masksOf(entries, (m) => m.ht <= spec.readHt && (!keepDeleted || spec.maxHt === undefined || m.ht < spec.maxHt));
  const out: CellEntry[] = [];
  const n = spec.versions ?? 1;
  for (let i = 0; i < retained.length && out.length < n; i++) {
    const p = retained[i]!;
    if (i >= rules.minVersions && expiredAt(p, rules, spec.readHt)) continue;
    if (!inRange(p)) continue;
    if (markers.masked(p)) continue;
    out.push(p);
  }
  return out;
}

/**
 * What GC at `cutoff` deletes of one row: `byColumn` holds each column's versions (without row
 * tombstones), `rowMarkers` the row tombstones, `rulesOf` each column's family rules. Returns the
 * entries to delete (the same objects).
 */
export function cellGcDrops(byColumn: ReadonlyMap<number, readonly CellEntry[]>, rowMarkers: readonly CellEntry[], rulesOf: (columnId: number) => CellRules, cutoff: HybridTime): Set<CellEntry> {
  const drop = new Set<CellEntry>();
  const kept: CellEntry[] = [];
  for (const [columnId, own] of byColumn) {
    const rules = rulesOf(columnId);
    const entries = [...own, ...rowMarkers];
    const retained = retainedPuts(entries, rules, cutoff);
    // The oldest suffix of retained puts that are all past their TTL beyond MIN_VERSIONS.
    let keepUpTo = retained.length;
    while (keepUpTo > rules.minVersions && expiredAt(retained[keepUpTo - 1]!, rules, cutoff)) keepUpTo--;
    const keep = new Set(retained.slice(0, keepUpTo));
    for (const e of own) {
      if (e.kind !== 'put' || e.ht > cutoff) continue;
      if (keep.has(e)) kept.push(e);
      else drop.add(e);
    }
    for (const e of own) if (e.kind === 'put' && e.ht > cutoff) kept.push(e);
  }
  // A marker at or before the cutoff stays while it masks a put that stays: a column marker one of its
  // column's, a row marker any column's — each "oldest kept put at or before it" / "a kept put at its time".
  const oldestKept = (list: readonly CellEntry[]): CellEntry | undefined => list.reduce<CellEntry | undefined>((o, p) => (o === undefined || atOrBefore(p, o) ? p : o), undefined);
  const keptByColumn = new Map<number, CellEntry[]>();
  for (const p of kept) {
    const l = keptByColumn.get(p.columnId);
    if (l) l.push(p);
    else keptByColumn.set(p.columnId, [p]);
  }
  for (const [columnId, own] of byColumn) {
    const mine = keptByColumn.get(columnId) ?? [];
    const oldest = oldestKept(mine);
    const hts = new Set(mine.map((p) => p.ht));
    for (const m of own) {
      if (m.kind === 'put' || m.ht > cutoff) continue;
      const masksKept = m.kind === 'deleteVersion' ? hts.has(m.ht) : oldest !== undefined && atOrBefore(oldest, m);
      if (!masksKept) drop.add(m);
    }
  }
  const oldestAll = oldestKept(kept);
  for (const m of rowMarkers) if (m.ht <= cutoff && !(oldestAll !== undefined && atOrBefore(oldestAll, m))) drop.add(m);
  return drop;
}
