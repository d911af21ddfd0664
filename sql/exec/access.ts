/**
 * Access paths: which rows of a table a statement reads. Equality on every hash key column (and every
 * range column) is a point read; equality on the hash columns a scan of that hash key, narrowed by
 * bounds on the first range column; anything else a full scan. The statement's WHERE is still
 * applied to what comes back, so a path only has to return a superset.
 */
import type { ColumnValue as Primitive, Row, Table } from '../../client';
import type { FilterAst } from '../../common/filter-ast';
import type { Node } from '../sql-parser';
import { baseName, names } from './ast';
import { compareValues, compileExpr, type CompileEnv } from './expr';
import type { SqlIndexDef, SqlTableDef } from './catalog';
import { baseKeyOf } from './indexes';
import { Scope, type EvalContext, type Tuple } from './scope';
import { isIntegerType, toStorage, type SqlValue } from './sql-types';
import { SqlError, SqlState } from './sql-error';
import { conjuncts } from './where-pushdown';

/** Deadline of one table read of a statement (a full scan of a large table takes longer than the client's 10 s default). */
export const SCAN_TIMEOUT_MS = 120_000;

export type AccessPath =
  | { type: 'point'; key: Row }
  | { type: 'hashScan'; hashKey: Row; rangeStart?: Row; rangeEnd?: Row }
  | { type: 'index'; index: SqlIndexDef; eq: Row; bounds: Array<{ col: string; op: string; value: Primitive }> }
  | { type: 'full' };

const FLIP: Record<string, string> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/** Conditions `column op constant` on this table's columns (constants may use parameters). */
function keyConditions(where: Node | undefined, def: SqlTableDef, alias: string, env: CompileEnv, ctx: EvalContext): Array<{ col: string; op: string; value: SqlValue }> {
  const out: Array<{ col: string; op: string; value: SqlValue }> = [];
  for (const c of conjuncts(where)) {
    if (!('A_Expr' in c) || (c.A_Expr.kind ?? 'AEXPR_OP') !== 'AEXPR_OP' || !c.A_Expr.lexpr || !c.A_Expr.rexpr) continue;
    const op = baseName(c.A_Expr.name);
    if (!FLIP[op]) continue;
    for (const [colSide, valSide, o] of [[c.A_Expr.lexpr, c.A_Expr.rexpr, op], [c.A_Expr.rexpr, c.A_Expr.lexpr, FLIP[op]!]] as const) {
      if (!('ColumnRef' in colSide)) continue;
      const parts = names(colSide.ColumnRef.fields);
      if (parts.length > 2 || (parts.length === 2 && parts[0] !== alias)) continue;
      const col = def.columns.find((x) => x.name === parts[parts.length - 1]);
      if (!col) continue;
      let value: SqlValue;
      try {
        value = compileExpr(valSide, new Scope([]), env).eval([], ctx);
      } catch {
        continue;
      }
      if (value === null) continue;
      out.push({ col: col.name, op: o, value: toStorage(value, col.type) });
      break;
    }
  }
  return out;
}

export function chooseAccess(def: SqlTableDef, alias: string, where: Node | undefined, env: CompileEnv, ctx: EvalContext): AccessPath {
  const conds = keyConditions(where, def, alias, env, ctx);
  const path = keyAccess(def, conds);
  if (path.type !== 'full') return path;
  return indexAccess(def, conds) ?? path;
}

/**
 * The best index for the conditions: the longest run of `=` on its leading columns, then bounds on
 * the next one; a UNIQUE index with `=` on every column wins outright (one entry at most).
 */
function indexAccess(def: SqlTableDef, conds: Array<{ col: string; op: string; value: SqlValue }>): AccessPath | undefined {
  let best: { score: number; path: AccessPath } | undefined;
  for (const ix of def.indexes ?? []) {
    // An index still being built (index-build.ts) may lack rows: not read until it is ready.
    if ((ix.state ?? 'ready') !== 'ready') continue;
    const eq: Row = {};
    let n = 0;
    for (const c of ix.columns) {
      const e = conds.find((x) => x.col === c && x.op === '=');
      if (!e) break;
      eq[c] = e.value as Primitive;
      n++;
    }
    const next = ix.columns[n];
    const bounds = next ? conds.filter((x) => x.col === next && x.op !== '=').map((x) => ({ col: x.col, op: x.op, value: x.value as Primitive })) : [];
    if (n === 0 && bounds.length === 0) continue;
    const score = (ix.unique && n === ix.columns.length ? 1000 : 0) + n * 2 + (bounds.length > 0 ? 1 : 0);
    if (!best || score > best.score) best = { score, path: { type: 'index', index: ix, eq, bounds } };
  }
  return best?.path;
}

function keyAccess(def: SqlTableDef, conds: Array<{ col: string; op: string; value: SqlValue }>): AccessPath {
  const eq = new Map(conds.filter((c) => c.op === '=').map((c) => [c.col, c.value]));
  if (def.hash.length > 0 && !def.hash.every((h) => eq.has(h))) return { type: 'full' };
  const hashKey: Row = Object.fromEntries(def.hash.map((h) => [h, eq.get(h)!]));
  if (def.range.every((r) => eq.has(r))) {
    if (def.hash.length === 0 && def.range.length === 0) return { type: 'full' };
    return { type: 'point', key: { ...hashKey, ...Object.fromEntries(def.range.map((r) => [r, eq.get(r)!])) } };
  }
  if (def.hash.length === 0 && def.range.length === 0) return { type: 'full' };
  const first = def.range[0];
  const firstDef = def.columns.find((c) => c.name === first);
  let rangeStart: Row | undefined;
  let rangeEnd: Row | undefined;
  if (first && firstDef && isIntegerType(firstDef.type)) {
    for (const c of conds.filter((x) => x.col === first && typeof x.value === 'bigint')) {
      const v = c.value as bigint;
      if (c.op === '=') { rangeStart = { [first]: v }; rangeEnd = { [first]: v + 1n }; }
      if (c.op === '>=' && !rangeStart) rangeStart = { [first]: v };
      if (c.op === '>' && !rangeStart) rangeStart = { [first]: v + 1n };
      if (c.op === '<' && !rangeEnd) rangeEnd = { [first]: v };
      if (c.op === '<=' && !rangeEnd) rangeEnd = { [first]: v + 1n };
    }
  } else if (first && firstDef && (firstDef.type === 'text' || firstDef.type === 'varchar')) {
    // Text keys are stored as UTF-8 (byte order); the executor compares UTF-16 code units. The two
    // orders agree on any value against a bound whose characters are all below U+D800, so only such
    // bounds narrow the scan (a superset either way: the executor checks WHERE again).
    for (const c of conds.filter((x) => x.col === first && typeof x.value === 'string' && !/[\uD800-\uFFFF]/.test(x.value))) {
      const v = c.value as string;
      if (c.op === '=') { rangeStart = { [first]: v }; rangeEnd = { [first]: successor(v)! }; }
      if (c.op === '>=' && !rangeStart) rangeStart = { [first]: v };
      if (c.op === '>' && !rangeStart) rangeStart = { [first]: successor(v)! };
      if (c.op === '<' && !rangeEnd) rangeEnd = { [first]: v };
      if (c.op === '<=' && !rangeEnd) rangeEnd = { [first]: successor(v)! };
    }
  }
  if (def.hash.length === 0 && !rangeStart && !rangeEnd) return { type: 'full' };
  return { type: 'hashScan', hashKey, ...(rangeStart ? { rangeStart } : {}), ...(rangeEnd ? { rangeEnd } : {}) };
}

/** The smallest value above every value that starts with `v` (a key prefix's exclusive end), if there is one. */
function successor(v: Primitive): Primitive | undefined {
  if (typeof v === 'bigint') return v < (1n << 63n) - 1n ? v + 1n : undefined;
  if (typeof v === 'string') return v + '\u0000';
  if (v instanceof Uint8Array) return Buffer.concat([v, Buffer.alloc(1)]);
  return undefined;
}

/** Scan bounds of an index path on the index table's range columns (a superset: entries are checked again). */
function indexBounds(path: Extract<AccessPath, { type: 'index' }>): { rangeStart?: Row; rangeEnd?: Row } {
  const eqCols = Object.keys(path.eq);
  const next = path.index.columns[eqCols.length];
  let rangeStart: Row | undefined = eqCols.length > 0 ? { ...path.eq } : undefined;
  let rangeEnd: Row | undefined;
  for (const b of path.bounds) {
    if ((b.op === '>' || b.op === '>=') && next) rangeStart = { ...path.eq, [next]: b.value };
    if (b.op === '<' && next) rangeEnd = { ...path.eq, [next]: b.value };
    const s = b.op === '<=' ? successor(b.value) : undefined;
    if (s !== undefined && next) rangeEnd = { ...path.eq, [next]: s };
  }
  if (!rangeEnd && eqCols.length > 0) {
    const last = eqCols[eqCols.length - 1]!;
    const s = successor(path.eq[last]!);
    if (s !== undefined) rangeEnd = { ...path.eq, [last]: s };
  }
  return { ...(rangeStart ? { rangeStart } : {}), ...(rangeEnd ? { rangeEnd } : {}) };
}

function entryMatches(path: Extract<AccessPath, { type: 'index' }>, e: Row): boolean {
  for (const [c, v] of Object.entries(path.eq)) if (compareValues(e[c] ?? null, v) !== 0) return false;
  for (const b of path.bounds) {
    // Indexed values are never NULL (such rows have no entry), nor are the bounds.
    const cmp = compareValues(e[b.col] ?? null, b.value);
    if ((b.op === '<' && cmp >= 0) || (b.op === '<=' && cmp > 0) || (b.op === '>' && cmp <= 0) || (b.op === '>=' && cmp < 0)) return false;
  }
  return true;
}

/** Base rows a secondary index finds: its matching entries, then a point read of each row (in the same transaction). */
async function readThroughIndex(
  tableOf: (name: string) => Table,
  def: SqlTableDef,
  path: Extract<AccessPath, { type: 'index' }>,
  rowsMax: number,
  proj: { columns?: string[]; timeoutMs: number },
  readHt: bigint | undefined,
  getRow: (t: Table, key: Row, o: { columns?: string[]; timeoutMs: number }) => Promise<Row | undefined>,
): Promise<Row[]> {
  const entries = (await tableOf(path.index.storage).scan({ ...indexBounds(path), limit: rowsMax + 1, timeoutMs: proj.timeoutMs, ...(readHt !== undefined ? { readHt } : {}) })).filter((e) => entryMatches(path, e));
  if (entries.length > rowsMax) return entries; // the caller reports the limit
  const base = tableOf(def.name);
  const out: Array<Row | undefined> = new Array(entries.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < entries.length) {
      const i = next++;
      out[i] = await getRow(base, baseKeyOf(def, entries[i]!), proj);
    }
  };
  await Promise.all(Array.from({ length: Math.min(INDEX_LOOKUPS_IN_FLIGHT_MAX, entries.length) }, worker));
  // An entry without its row cannot be seen inside one transaction's snapshot; outside one (a plain
  // read racing a writer) the row is simply not returned, and WHERE is applied to what is.
  return out.filter((r): r is Row => r !== undefined);
}

/** Point reads in flight at once behind one index scan. */
export const INDEX_LOOKUPS_IN_FLIGHT_MAX = 32;

/**
 * A point read as of `readHt` (yb_read_time): gets have no read time of their own, so it is a scan of
 * the key's hash, from its range part, of one row — which is the row only if its key is the key.
 */
export function pointReaderAt(def: SqlTableDef, readHt: bigint): (t: Table, key: Row, proj: { columns?: string[]; timeoutMs: number }) => Promise<Row | undefined> {
  return async (t, key, proj) => {
    const hashKey = Object.fromEntries(def.hash.map((c) => [c, key[c]!]));
    const rangeStart = def.range.length > 0 ? Object.fromEntries(def.range.map((c) => [c, key[c]!])) : undefined;
    const [r] = await t.scan({ ...(def.hash.length > 0 ? { hashKey } : {}), ...(rangeStart ? { rangeStart } : {}), limit: 1, readHt, ...proj });
    return r && [...def.hash, ...def.range].every((c) => compareValues(r[c] ?? null, key[c] ?? null) === 0) ? r : undefined;
  };
}

/**
 * Rows of `def` through `path`, as tuples in the table's column order (`tableOf` opens the table and
 * its indexes); with `readHt`, as of that hybrid time (yb_read_time), outside any transaction.
 */
export async function readRows(tableOf: (name: string) => Table, def: SqlTableDef, path: AccessPath, rowsMax: number, columns?: string[], readHt?: bigint, filter?: FilterAst): Promise<Tuple[]> {
  let rows: Row[];
  const table = tableOf(def.name);
  const proj = { ...(columns ? { columns } : {}), timeoutMs: SCAN_TIMEOUT_MS };
  // The filter (where-pushdown.ts) rides on scans; point reads and index lookups fetch rows by key.
  const at = { ...(readHt !== undefined ? { readHt } : {}), ...(filter ? { filter } : {}) };
  const getRow = readHt !== undefined ? pointReaderAt(def, readHt) : (t: Table, key: Row, o: typeof proj) => t.get(key, o);
  if (path.type === 'index') {
    rows = await readThroughIndex(tableOf, def, path, rowsMax, proj, readHt, getRow);
  } else if (path.type === 'point') {
    const r = await getRow(table, path.key, proj);
    rows = r ? [r] : [];
  } else if (path.type === 'hashScan') {
    rows = await table.scan({ ...(def.hash.length > 0 ? { hashKey: path.hashKey } : {}), ...(path.rangeStart ? { rangeStart: path.rangeStart } : {}), ...(path.rangeEnd ? { rangeEnd: path.rangeEnd } : {}), limit: rowsMax + 1, ...proj, ...at });
  } else rows = await table.scan({ limit: rowsMax + 1, ...proj, ...at });
  if (rows.length > rowsMax) throw new SqlError(SqlState.PROGRAM_LIMIT, `statement reads more than ${rowsMax} rows of ${def.name} (ysql_rows_in_memory_max)`);
  return rows.map((r) => def.columns.map((c) => r[c.name] ?? null));
}

export function describePath(def: SqlTableDef, path: AccessPath): string {
  const show = (v: unknown): string => (typeof v === 'string' ? `'${v.replace(/\u0000$/, '').replace(/'/g, "''")}'` : String(v));
  const kv = (r: Row): string => Object.entries(r).map(([k, v]) => `${k} = ${show(v)}`).join(' AND ');
  // A text bound made by successor() (the value and a NUL) is the value itself, the other side of it.
  const past = (r: Row): boolean => { const v = Object.values(r).at(-1); return typeof v === 'string' && v.endsWith('\u0000'); };
  if (path.type === 'point') return `Point read on ${def.name} (key: ${kv(path.key)}; one tablet)`;
  if (path.type === 'hashScan') {
    const parts = [def.hash.length > 0 ? `hash key: ${kv(path.hashKey)}; one tablet` : 'range-partitioned'];
    if (path.rangeStart) parts.push(`${past(path.rangeStart) ? 'after' : 'from'} ${kv(path.rangeStart)}`);
    if (path.rangeEnd) parts.push(`${past(path.rangeEnd) ? 'through' : 'before'} ${kv(path.rangeEnd)}`);
    return `Range scan on ${def.name} (${parts.join('; ')})`;
  }
  if (path.type === 'index') {
    const conds = [...Object.entries(path.eq).map(([c, v]) => `${c} = ${String(v)}`), ...path.bounds.map((b) => `${b.col} ${b.op} ${String(b.value)}`)];
    return `Index scan using ${path.index.name} on ${def.name} (${conds.join(' AND ')}; then a point read per row)`;
  }
  return `Full scan on ${def.name} (every tablet)`;
}
