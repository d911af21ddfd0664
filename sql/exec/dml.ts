/**
 * INSERT / UPDATE / DELETE. Rows are checked (NOT NULL, types, lengths) and written through the
 * client: inside a transaction through its table handles, else as plain writes. Keys that come from a
 * sequence or the hidden row id are new by construction, so those rows go as batched upserts
 * (upsertMany: one RPC per tablet per batch); rows with given keys are inserted one by one (bounded
 * concurrency), so a duplicate key fails with 23505 as in PostgreSQL; ON CONFLICT DO NOTHING skips it,
 * ON CONFLICT (key) DO UPDATE updates the existing row (planOnConflictUpdate).
 */
import * as crypto from 'node:crypto';
import type { Row, Table } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import type { Node } from '../sql-parser';
import { names } from './ast';
import { ROW_ID_COLUMN, type SqlTableDef } from './catalog';
import { compileExpr, truth, type CompileEnv } from './expr';
import { Scope, type Compiled, type EvalContext, type Tuple } from './scope';
import { compileSelect, fromList, type OutputField, type PlanEnv, type SelectPlan } from './select';
import { notSupported, SqlError, SqlState } from './sql-error';
import { coerce, fitNumeric, isIntegerType, numericToInt, textOf, toStorage, type SqlTypeName, type SqlValue } from './sql-types';
import { charLength } from './functions';
import { columnsOf } from './preload';
import { indexDelete, indexInsert, indexUpdate } from './indexes';
import { WritePipeline } from './write-pipeline';

/** Single-row writes in flight at once for one statement. */
export const STATEMENT_WRITES_IN_FLIGHT_MAX = 32;
/** Batch write RPCs (up to 4 MiB each) in flight at once for one statement. */
export const BIG_WRITE_CONCURRENCY = 2;

export interface DmlDeps {
  table: (name: string) => Table;
  /** Values of a sequence for `n` rows. */
  takeSequence: (name: string, n: number) => Promise<bigint[]>;
  /** Fills the caches of the sequences a DEFAULT's nextval('name') calls name, for `n` rows (sequence-ddl.ts). */
  fillSequences?: (ast: Node, n: number) => Promise<void>;
  env: CompileEnv;
  planEnv: PlanEnv;
  ctx: EvalContext;
}

export interface DmlResult {
  count: number;
  returning?: { fields: OutputField[]; rows: Tuple[] };
}

async function pool<T>(items: T[], f: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await f(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(STATEMENT_WRITES_IN_FLIGHT_MAX, items.length) }, worker));
}

function uniqueViolation(def: SqlTableDef, row: Row): SqlError {
  const keys = [...def.hash, ...def.range];
  return new SqlError(SqlState.UNIQUE_VIOLATION, `duplicate key value violates unique constraint "${def.name}_pkey"`, { detail: `Key (${keys.join(', ')})=(${keys.map((k) => String(row[k])).join(', ')}) already exists.` });
}

/** Each definition's CHECK constraints, compiled once (the definition object changes with the table). */
const compiledChecks = new WeakMap<SqlTableDef, Array<{ name: string; e: Compiled }>>();

/** Where CHECK expressions compile and run (a statement's parameters and session). */
export interface CheckEnv {
  env: CompileEnv;
  ctx: EvalContext;
}

/** 23514 unless every CHECK constraint is true or NULL for the row (PostgreSQL's rule). */
function checkConstraints(def: SqlTableDef, values: SqlValue[], ev: CheckEnv): void {
  let checks = compiledChecks.get(def);
  if (!checks) {
    const scope = new Scope(columnsOf(def, def.name));
    checks = (def.checks ?? []).map((c) => ({ name: c.name, e: compileExpr(JSON.parse(c.ast) as Node, scope, ev.env) }));
    compiledChecks.set(def, checks);
  }
  const row = def.columns.map((_, i) => values[i] ?? null);
  for (const c of checks) {
    if (truth(c.e.eval(row, ev.ctx)) === false) throw new SqlError(SqlState.CHECK_VIOLATION, `new row for relation "${def.name}" violates check constraint "${c.name}"`, { detail: `Failing row contains (${row.map((v) => (v === null ? 'null' : textOf(v))).join(', ')}).` });
  }
}

/** Check one full row (SQL values in column order) and turn it into a storage row. */
export function checkRow(def: SqlTableDef, values: SqlValue[], ev?: CheckEnv): Row {
  if (def.checks?.length) {
    if (!ev) throw new SqlError(SqlState.INTERNAL, `CHECK constraints of ${def.name} not evaluated: no statement context`);
    checkConstraints(def, values, ev);
  }
  const row: Row = {};
  def.columns.forEach((c, i) => {
    const v = toStorage(values[i] ?? null, c.type);
    if (v === null && c.notNull) throw new SqlError(SqlState.NOT_NULL_VIOLATION, `null value in column "${c.name}" of relation "${def.name}" violates not-null constraint`);
    if (c.scale !== undefined && typeof v === 'string') { row[c.name] = fitNumeric(v, c.typmod, c.scale); return; }
    if (c.typmod >= 0 && typeof v === 'string' && (c.type === 'varchar' || c.type === 'bpchar') && charLength(v) > c.typmod) throw new SqlError(SqlState.STRING_TOO_LONG, `value too long for type ${c.type === 'bpchar' ? 'character' : 'character varying'}(${c.typmod})`);
    row[c.name] = v;
  });
  return row;
}

/** RETURNING's `*` (or `t.*`): the table's visible columns, named one by one. */
function expandStar(list: Node[], def: SqlTableDef): Node[] {
  return list.flatMap((t) => {
    const ref = 'ResTarget' in t && t.ResTarget.val && 'ColumnRef' in t.ResTarget.val ? t.ResTarget.val.ColumnRef : undefined;
    const last = ref?.fields?.at(-1);
    if (!ref || !last || !('A_Star' in last)) return [t];
    return def.columns.filter((c) => !c.hidden).map((c) => ({ ResTarget: { val: { ColumnRef: { fields: [{ String: { sval: c.name } }] } } } }) as Node);
  });
}

function returning(list: Node[] | undefined, def: SqlTableDef, rows: Tuple[], deps: DmlDeps): DmlResult['returning'] {
  if (!list || list.length === 0) return undefined;
  const p = compileSelect({ targetList: expandStar(list, def), fromClause: [], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' }, deps.planEnv, new Scope(columnsOf(def, def.name)));
  return { fields: p.fields, rows: rows.map((r) => p.run({ ...deps.ctx, outerRows: [r] })[0]!) };
}

type InsertStmt = Extract<Node, { InsertStmt: unknown }>['InsertStmt'];

/** The rows an INSERT supplies (VALUES lists or a SELECT), as SQL values per target column; undefined = DEFAULT. */
/**
 * The value for a target column of `to`'s type from an expression of type `from`: a numeric into an
 * integer column rounds its halves away from zero (PostgreSQL's assignment cast; 2.5 → 3).
 */
function assign(v: SqlValue, from: SqlTypeName, to: SqlTypeName): SqlValue {
  return from === 'numeric' && isIntegerType(to) ? numericToInt(v, to) : v;
}

async function sourceRows(stmt: InsertStmt, deps: DmlDeps, targets: SqlTypeName[]): Promise<Array<Array<SqlValue | undefined>>> {
  const width = targets.length;
  const sel = stmt.selectStmt && 'SelectStmt' in stmt.selectStmt ? stmt.selectStmt.SelectStmt : undefined;
  if (!sel) return [new Array<undefined>(width).fill(undefined)];
  if (sel.valuesLists) {
    const scope = new Scope([]);
    return sel.valuesLists.map((l) => {
      const items = 'List' in l ? l.List.items ?? [] : [];
      if (items.length !== width) throw new SqlError(SqlState.SYNTAX_ERROR, items.length > width ? 'INSERT has more expressions than target columns' : 'INSERT has more target columns than expressions');
      return items.map((e, i) => {
        if ('SetToDefault' in e) return undefined;
        const c = compileExpr(e, scope, deps.env);
        return assign(c.eval([], deps.ctx), c.type, targets[i]!);
      });
    });
  }
  const p = compileSelect(sel, deps.planEnv);
  if (p.fields.length !== width) throw new SqlError(SqlState.SYNTAX_ERROR, p.fields.length > width ? 'INSERT has more expressions than target columns' : 'INSERT has more target columns than expressions');
  const rows = await (p.runAsync ? p.runAsync(deps.ctx) : p.run(deps.ctx));
  const numeric = p.fields.map((f, i) => f.type === 'numeric' && isIntegerType(targets[i]!));
  return numeric.some(Boolean) ? rows.map((r) => r.map((v, i) => (numeric[i] ? assign(v, 'numeric', targets[i]!) : v))) : rows;
}

/** The length of an INSERT's VALUES lists (they must all be equal), or undefined without VALUES. */
function valuesWidth(stmt: InsertStmt): number | undefined {
  const sel = stmt.selectStmt && 'SelectStmt' in stmt.selectStmt ? stmt.selectStmt.SelectStmt : undefined;
  if (!sel?.valuesLists) return undefined;
  const widths = new Set(sel.valuesLists.map((l) => ('List' in l ? l.List.items?.length ?? 0 : 0)));
  if (widths.size > 1) throw new SqlError(SqlState.SYNTAX_ERROR, 'VALUES lists must all be the same length');
  return [...widths][0];
}

export async function insertRows(stmt: InsertStmt, def: SqlTableDef, deps: DmlDeps): Promise<DmlResult> {
  const visible = def.columns.filter((c) => !c.hidden);
  // Without a column list, VALUES may give fewer expressions than the table has columns: they fill the
  // first columns and the rest take their defaults, as in PostgreSQL.
  const targets = stmt.cols ? stmt.cols.map((c) => ('ResTarget' in c ? c.ResTarget.name ?? '' : '')) : visible.slice(0, Math.min(visible.length, valuesWidth(stmt) ?? visible.length)).map((c) => c.name);
  const idx = targets.map((t) => {
    const i = def.columns.findIndex((c) => c.name === t && !c.hidden);
    if (i < 0) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${t}" of relation "${def.name}" does not exist`);
    return i;
  });
  const onConflict = stmt.onConflictClause?.action;
  const upsertPlan = onConflict === 'ONCONFLICT_UPDATE' ? planOnConflictUpdate(stmt, def, deps) : undefined;
  const keyCols = [...def.hash, ...def.range];
  // Keys generated for every row (serial default, hidden row id) are new: such rows go as batched
  // upserts, and an INSERT … SELECT streams: the next chunk is computed while the last one is written.
  const keysGenerated = keyCols.every((k) => !targets.includes(k) && (def.columns.find((c) => c.name === k)?.sequence !== undefined || def.columns.find((c) => c.name === k)?.hidden === true));
  const sel = stmt.selectStmt && 'SelectStmt' in stmt.selectStmt ? stmt.selectStmt.SelectStmt : undefined;
  if (keysGenerated && !onConflict && sel && !sel.valuesLists) {
    const p = compileSelect(sel, deps.planEnv);
    if (p.stream) {
      if (p.fields.length !== targets.length) throw new SqlError(SqlState.SYNTAX_ERROR, p.fields.length > targets.length ? 'INSERT has more expressions than target columns' : 'INSERT has more target columns than expressions');
      return streamInsert(stmt, def, idx, p.stream, deps);
    }
  }
  const src = await sourceRows(stmt, deps, idx.map((i) => def.columns[i]!.type));
  const { full, generated } = await completeRows(def, src, idx, deps);
  const rows = full.map((v) => checkRow(def, v, deps));
  const t = deps.table(def.name);
  if (upsertPlan) return upsertPlan(full, rows);
  let written = full;
  if (onConflict !== 'ONCONFLICT_NOTHING' && keyCols.every((k) => generated.has(k))) {
    // Large rows go a few RPCs at a time: the SQL endpoint shares its process with a tserver, whose Raft
    // work and this transaction's heartbeats must not starve behind tens of MiB in flight.
    // One row (pgbench's history INSERT) as an upsert: a block keeps it back to the COMMIT with its other writes.
    if (rows.length === 1) await t.upsert(rows[0]!);
    else await t.upsertMany(rows, { concurrency: BIG_WRITE_CONCURRENCY });
    await indexInsert(def, deps.table, rows);
  } else {
    const ok: boolean[] = rows.map(() => true);
    await pool(rows.map((r, i) => [r, i] as const), async ([r, i]) => {
      try {
        if (onConflict === 'ONCONFLICT_NOTHING' && (await t.get(Object.fromEntries(keyCols.map((k) => [k, r[k]!]))))) ok[i] = false;
        // Sent at once in a block that keeps writes back: a duplicate key is this statement's error.
        else await t.insert(r, { keepBack: false });
      } catch (e) {
        if (e instanceof DbError && e.code === ErrorCode.ALREADY_EXISTS) {
          if (onConflict === 'ONCONFLICT_NOTHING') ok[i] = false;
          else throw uniqueViolation(def, r);
        } else throw e;
      }
    });
    written = full.filter((_, i) => ok[i]);
    await indexInsert(def, deps.table, rows.filter((_, i) => ok[i]));
  }
  const ret = returning(stmt.returningClause?.exprs, def, written, deps);
  return { count: written.length, ...(ret ? { returning: ret } : {}) };
}

/**
 * One SET target's value. `SET (a, b) = (x, y)` arrives as a MultiAssignRef per column naming its
 * place in the row; `SET (a, b) = (SELECT …)` as one whose source is a subquery, run once per row for
 * all its columns (kept in `multi` by the source's text, per row).
 */
function setValue(val: Node, scope: Scope, deps: DmlDeps, multi: Map<string, (row: Tuple, ctx: EvalContext) => Tuple>): Compiled {
  if (!('MultiAssignRef' in val)) return compileExpr(val, scope, deps.env);
  const m = val.MultiAssignRef;
  const k = (m.colno ?? 1) - 1;
  const src = m.source!;
  if ('RowExpr' in src) {
    const args = src.RowExpr.args ?? [];
    if (args.length !== m.ncolumns) throw new SqlError(SqlState.SYNTAX_ERROR, `number of columns does not match number of values`);
    return compileExpr(args[k]!, scope, deps.env);
  }
  if (!('SubLink' in src) || !src.SubLink.subselect) throw notSupported('this multiple-column SET source');
  // Each column's MultiAssignRef carries its own copy of the source: the copies are one by their text.
  const key = JSON.stringify(src);
  let rowOf = multi.get(key);
  if (!rowOf) {
    const plan = deps.env.subquery(src.SubLink.subselect, scope);
    if (plan.columns !== m.ncolumns) throw new SqlError(SqlState.SYNTAX_ERROR, `number of columns does not match number of values`);
    const seen = new WeakMap<Tuple, Tuple>();
    rowOf = (row, ctx) => {
      let r = seen.get(row);
      if (!r) {
        const rows = plan.run({ ...ctx, outerRows: [...ctx.outerRows, row] });
        if (rows.length > 1) throw new SqlError(SqlState.CARDINALITY, 'more than one row returned by a subquery used as an expression');
        r = rows[0] ?? new Array<SqlValue>(plan.columns).fill(null);
        seen.set(row, r);
      }
      return r;
    };
    multi.set(key, rowOf);
  }
  const whole = rowOf;
  return { type: 'unknown', name: '', eval: (row, ctx) => whole(row, ctx)[k] ?? null };
}

/** SET col = expr, … of an UPDATE or an ON CONFLICT DO UPDATE: the column's index and name and its compiled value. */
function compileSets(list: Node[] | undefined, def: SqlTableDef, scope: Scope, deps: DmlDeps, keysToo = false): Array<{ i: number; name: string; e: Compiled }> {
  const keyCols = [...def.hash, ...def.range];
  const multi = new Map<string, (row: Tuple, ctx: EvalContext) => Tuple>();
  return (list ?? []).map((n) => {
    if (!('ResTarget' in n)) throw notSupported('this SET clause');
    const name = n.ResTarget.name ?? '';
    const i = def.columns.findIndex((c) => c.name === name && !c.hidden);
    if (i < 0) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${name}" of relation "${def.name}" does not exist`);
    if (keyCols.includes(name) && !keysToo) throw notSupported('updating a primary key column in ON CONFLICT DO UPDATE');
    if (n.ResTarget.indirection) throw notSupported(`SET ${names(n.ResTarget.indirection).join('.')}`);
    const c = setValue(n.ResTarget.val!, scope, deps, multi);
    const to = def.columns[i]!.type;
    // A quoted literal takes the column's type when the statement is planned, as in PostgreSQL: a bad
    // one is its error (22P02) even when no row matches.
    const val = n.ResTarget.val!;
    if (c.type === 'unknown' && 'A_Const' in val && val.A_Const.sval) coerce(val.A_Const.sval.sval ?? '', to);
    return { i, name, e: c.type === 'numeric' && isIntegerType(to) ? { ...c, eval: (row, ctx) => assign(c.eval(row, ctx), c.type, to) } : c };
  });
}

/**
 * INSERT … ON CONFLICT (key) DO UPDATE SET … [WHERE …]: per row, read it by key; absent → insert the
 * proposed row, present → evaluate SET (and WHERE) over the existing row and the proposed one
 * (`excluded`) and write the changed columns. The statement always runs in a transaction (its own
 * outside BEGIN: session.ts), so the read and the write are one snapshot and a concurrent writer of
 * the same row conflicts (40001) instead of being lost. The only unique constraint is the primary key,
 * so the conflict target must name exactly its columns (or `ON CONSTRAINT <table>_pkey`).
 */
function planOnConflictUpdate(stmt: InsertStmt, def: SqlTableDef, deps: DmlDeps): (full: SqlValue[][], rows: Row[]) => Promise<DmlResult> {
  const oc = stmt.onConflictClause!;
  const keyCols = [...def.hash, ...def.range];
  const inferred = (oc.infer?.indexElems ?? []).map((e) => ('IndexElem' in e ? e.IndexElem.name ?? '' : ''));
  if (oc.infer?.conname !== undefined) {
    if (oc.infer.conname !== `${def.name}_pkey`) throw new SqlError(SqlState.UNDEFINED_OBJECT, `constraint "${oc.infer.conname}" for table "${def.name}" does not exist`);
  } else if (inferred.length === 0) {
    throw new SqlError(SqlState.SYNTAX_ERROR, 'ON CONFLICT DO UPDATE requires inference specification or constraint name', { hint: 'For example, ON CONFLICT (column_name).' });
  } else if (inferred.length !== keyCols.length || !keyCols.every((k) => inferred.includes(k))) {
    throw new SqlError(SqlState.INVALID_COLUMN_REFERENCE, 'there is no unique or exclusion constraint matching the ON CONFLICT specification');
  }
  const alias = stmt.relation?.alias?.aliasname ?? def.name;
  // Expressions see the existing row under the table's name (or alias), then the proposed row as `excluded`.
  const scope = new Scope([...columnsOf(def, alias), ...columnsOf(def, 'excluded')]);
  const sets = compileSets(oc.targetList, def, scope, deps);
  const where = oc.whereClause ? compileExpr(oc.whereClause, scope, deps.env) : undefined;
  return async (full, rows) => {
    const seen = new Set<string>();
    for (const r of rows) {
      const k = JSON.stringify(keyCols.map((c) => String(r[c])));
      if (seen.has(k)) throw new SqlError(SqlState.CARDINALITY, 'ON CONFLICT DO UPDATE command cannot affect row a second time', { hint: 'Ensure that no rows proposed for insertion within the same command have duplicate constrained values.' });
      seen.add(k);
    }
    const t = deps.table(def.name);
    const out: Array<SqlValue[] | undefined> = rows.map(() => undefined);
    await pool(rows.map((_, i) => i), async (i) => {
      const key: Row = Object.fromEntries(keyCols.map((k) => [k, rows[i]![k]!]));
      const existing = await t.get(key);
      if (!existing) {
        await t.insert(rows[i]!, { keepBack: false });
        await indexInsert(def, deps.table, [rows[i]!]);
        out[i] = full[i]!;
        return;
      }
      const old = def.columns.map((c) => existing[c.name] ?? null);
      const both = [...old, ...full[i]!];
      if (where && truth(where.eval(both, deps.ctx)) !== true) return;
      const next = [...old];
      for (const s of sets) next[s.i] = s.e.eval(both, deps.ctx);
      const checked = checkRow(def, next, deps);
      const row: Row = { ...key };
      for (const s of sets) row[s.name] = checked[s.name]!;
      if (sets.length > 0) {
        await t.upsert(row);
        await indexUpdate(def, deps.table, [{ old: existing, next: checked }]);
      }
      out[i] = next;
    });
    const written = out.filter((r): r is SqlValue[] => r !== undefined);
    const ret = returning(stmt.returningClause?.exprs, def, written, deps);
    return { count: written.length, ...(ret ? { returning: ret } : {}) };
  };
}

/** Rows of SQL values per target column (undefined: DEFAULT) -> full rows with defaults, sequence values, row ids. */
async function completeRows(def: SqlTableDef, src: Array<Array<SqlValue | undefined>>, idx: number[], deps: DmlDeps): Promise<{ full: SqlValue[][]; generated: Set<string> }> {
  const full: SqlValue[][] = src.map(() => new Array<SqlValue>(def.columns.length).fill(null));
  const given = def.columns.map(() => src.map(() => false));
  src.forEach((r, ri) => r.forEach((v, k) => {
    if (v !== undefined) {
      full[ri]![idx[k]!] = v;
      given[idx[k]!]![ri] = true;
    }
  }));
  const generated = new Set<string>();
  for (const [ci, c] of def.columns.entries()) {
    const missing = src.map((_, ri) => ri).filter((ri) => !given[ci]![ri]);
    if (missing.length === 0) continue;
    if (c.hidden) {
      for (const ri of missing) full[ri]![ci] = crypto.randomBytes(8).readBigInt64BE();
      generated.add(c.name);
    } else if (c.sequence) {
      const vals = await deps.takeSequence(c.sequence, missing.length);
      missing.forEach((ri, k) => (full[ri]![ci] = vals[k]!));
      if (missing.length === src.length) generated.add(c.name);
    } else if (c.defaultAst) {
      const ast = JSON.parse(c.defaultAst) as Node;
      if (deps.fillSequences && c.defaultSql?.includes('nextval')) await deps.fillSequences(ast, missing.length);
      const e = compileExpr(ast, new Scope([]), deps.env);
      for (const ri of missing) full[ri]![ci] = e.eval([], deps.ctx);
    }
  }
  return { full, generated };
}

/** Batches of an INSERT … SELECT being written at once (each up to a few MiB: see STREAM_CHUNK_BYTES). */
export const STREAM_BATCHES_IN_FLIGHT_MAX = 2;

async function streamInsert(stmt: InsertStmt, def: SqlTableDef, idx: number[], stream: NonNullable<SelectPlan['stream']>, deps: DmlDeps): Promise<DmlResult> {
  const t = deps.table(def.name);
  const writes = new WritePipeline(STREAM_BATCHES_IN_FLIGHT_MAX);
  let count = 0;
  const written: SqlValue[][] = [];
  const keepRows = (stmt.returningClause?.exprs?.length ?? 0) > 0;
  await stream(deps.ctx, async (chunk) => {
    writes.throwIfFailed();
    const { full } = await completeRows(def, chunk, idx, deps);
    const rows = full.map((v) => checkRow(def, v, deps));
    count += rows.length;
    if (keepRows) written.push(...full);
    // Large rows go a few RPCs at a time: the SQL endpoint shares its process with a tserver, whose Raft
    // work and this transaction's heartbeats must not starve behind tens of MiB in flight.
    await writes.add(t.upsertMany(rows, { concurrency: BIG_WRITE_CONCURRENCY }).then(() => indexInsert(def, deps.table, rows)));
  });
  await writes.drain();
  const ret = returning(stmt.returningClause?.exprs, def, written, deps);
  return { count, ...(ret ? { returning: ret } : {}) };
}

/** UPDATE / DELETE over rows already read (the target's rows, filtered here by WHERE). */
export async function updateOrDelete(kind: 'update' | 'delete', stmt: { whereClause?: Node; targetList?: Node[]; returningClause?: { exprs?: Node[] }; fromClause?: Node[]; usingClause?: Node[] }, def: SqlTableDef, alias: string, candidates: Tuple[], deps: DmlDeps): Promise<DmlResult> {
  const others = [...(stmt.fromClause ?? []), ...(stmt.usingClause ?? [])];
  const from = others.length > 0 ? fromList(others, deps.planEnv) : undefined;
  const scope = new Scope([...columnsOf(def, alias), ...(from?.columns ?? [])]);
  const where = stmt.whereClause ? compileExpr(stmt.whereClause, scope, deps.env) : undefined;
  // With FROM / USING a target row is matched by its first joined row that passes WHERE (PostgreSQL
  // leaves which one unspecified); SET sees that joined row.
  const joined: Tuple[] = [];
  const fromRows = from ? from.rows(deps.ctx) : [[]];
  const matched = candidates.filter((r) => {
    for (const f of fromRows) {
      const row = from ? [...r, ...f] : r;
      if (!where || truth(where.eval(row, deps.ctx)) === true) { joined.push(row); return true; }
    }
    return false;
  });
  const keyCols = [...def.hash, ...def.range];
  const keyOf = (r: Tuple): Row => Object.fromEntries(keyCols.map((k) => [k, r[def.columns.findIndex((c) => c.name === k)] ?? null]));
  const t = deps.table(def.name);
  const rowOf = (r: Tuple): Row => Object.fromEntries(def.columns.map((c, i) => [c.name, (r[i] ?? null) as Row[string]]));
  if (kind === 'delete') {
    await pool(matched, (r) => t.delete(keyOf(r)));
    await indexDelete(def, deps.table, matched.map(rowOf));
    const ret = returning(stmt.returningClause?.exprs, def, matched, deps);
    return { count: matched.length, ...(ret ? { returning: ret } : {}) };
  }
  const sets = compileSets(stmt.targetList, def, scope, deps, true);
  const updated = matched.map((r, k) => {
    const next = [...r];
    for (const s of sets) next[s.i] = s.e.eval(joined[k]!, deps.ctx);
    return next;
  });
  if (sets.some((s) => keyCols.includes(s.name))) {
    await moveRows(def, matched.map(rowOf), updated.map((r) => checkRow(def, r, deps)), deps);
    const ret = returning(stmt.returningClause?.exprs, def, updated, deps);
    return { count: updated.length, ...(ret ? { returning: ret } : {}) };
  }
  const pairs: Array<{ old: Row; next: Row }> = [];
  await pool(updated.map((r, i) => [r, i] as const), async ([r, i]) => {
    const full = checkRow(def, r, deps);
    const row: Row = keyOf(r);
    for (const s of sets) row[def.columns[s.i]!.name] = full[def.columns[s.i]!.name]!;
    if (Object.keys(row).length === keyCols.length) return;
    await t.upsert(row);
    pairs.push({ old: rowOf(matched[i]!), next: full });
  });
  await indexUpdate(def, deps.table, pairs);
  const ret = returning(stmt.returningClause?.exprs, def, updated, deps);
  return { count: updated.length, ...(ret ? { returning: ret } : {}) };
}

/**
 * An UPDATE that sets primary key columns moves its rows: each old row is deleted and the new one
 * written whole, in the statement's transaction, with its index entries. The new keys are checked
 * first (23505 if two rows get one key, or a row this statement does not move holds it), all of them
 * before any write, so `SET id = id + 1` over consecutive keys succeeds (PostgreSQL may refuse it,
 * depending on the order it visits the rows).
 */
async function moveRows(def: SqlTableDef, olds: Row[], nexts: Row[], deps: DmlDeps): Promise<void> {
  const keyCols = [...def.hash, ...def.range];
  const keyOf = (r: Row): Row => Object.fromEntries(keyCols.map((k) => [k, r[k] ?? null]));
  const text = (r: Row): string => JSON.stringify(keyCols.map((k) => String(r[k])));
  const oldKeys = new Set(olds.map(text));
  const newKeys = new Set<string>();
  for (const n of nexts) {
    if (newKeys.has(text(n))) throw uniqueViolation(def, n);
    newKeys.add(text(n));
  }
  const t = deps.table(def.name);
  await pool(nexts.filter((n) => !oldKeys.has(text(n))), async (n) => {
    if (await t.get(keyOf(n))) throw uniqueViolation(def, n);
  });
  // An old key some row moves to is overwritten whole below; the others are deleted.
  await pool(olds.filter((o) => !newKeys.has(text(o))), (o) => t.delete(keyOf(o)));
  await indexDelete(def, deps.table, olds);
  await pool(nexts, (n) => t.upsert(n));
  await indexInsert(def, deps.table, nexts);
}

export { ROW_ID_COLUMN };
