/**
 * DDL: CREATE TABLE (SQL types -> tessera column types, PRIMARY KEY in PostgreSQL's or YugabyteDB's
 * spelling, hidden row id, NOT NULL, DEFAULT, serial), DROP TABLE, TRUNCATE, ALTER TABLE ADD PRIMARY
 * KEY (a rebuild, as YugabyteDB does it: the key is the table's storage order).
 * DDL is not transactional: it runs at once, also inside BEGIN (as YugabyteDB's did before 2.x).
 */
import type { ColumnSpec, Row, TesseraClient } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import type { Node, YbTableOptions } from '../sql-parser';
import { constInt, names } from './ast';
import { ROW_ID_COLUMN, tableOid, type SqlCatalog, type SqlCheckDef, type SqlColumnDef, type SqlTableDef } from './catalog';
import { compileExpr, typeOfTypeName } from './expr';
import { Scope } from './scope';
import type { SequenceCache } from './sequences';
import { notSupported, SqlError, SqlState } from './sql-error';
import { TYPES, type SqlTypeName } from './sql-types';
import { WritePipeline } from './write-pipeline';

export interface DdlDeps {
  client: TesseraClient;
  catalog: SqlCatalog;
  sequences: SequenceCache;
}

/** Deadline of the scan and of each batch of a table rebuild (ALTER TABLE ADD PRIMARY KEY). */
export const REBUILD_TIMEOUT_MS = 600_000;
/** Rows a table rebuild (ADD PRIMARY KEY) reads per scan page and writes per batch (COPY's batch size). */
export const REBUILD_BATCH_ROWS = 5000;
/** Batches of a table rebuild (ADD PRIMARY KEY) written at the same time while the scan reads on. */
export const REBUILD_BATCHES_IN_FLIGHT = 4;

type CreateStmt = Extract<Node, { CreateStmt: unknown }>['CreateStmt'];

/** The DEFAULT expression's text for display (pg_get_expr); the AST itself is what runs. */
export function exprSql(n: Node): string {
  if ('A_Const' in n) {
    const c = n.A_Const;
    if (c.isnull) return 'NULL';
    if (c.sval) return `'${(c.sval.sval ?? '').replace(/'/g, "''")}'::text`;
    if (c.boolval) return String(c.boolval.boolval === true);
    if (c.fval) return c.fval.fval ?? '0';
    return String(c.ival?.ival ?? 0);
  }
  if ('FuncCall' in n) return `${names(n.FuncCall.funcname).join('.')}(${(n.FuncCall.args ?? []).map(exprSql).join(', ')})`;
  if ('TypeCast' in n) return `${exprSql(n.TypeCast.arg!)}::${names(n.TypeCast.typeName?.names).filter((x) => x !== 'pg_catalog').join('.')}`;
  if ('SQLValueFunction' in n) return (n.SQLValueFunction.op ?? '').replace('SVFOP_', '').toLowerCase();
  if ('A_Expr' in n && n.A_Expr.lexpr === undefined && n.A_Expr.rexpr) return `-${exprSql(n.A_Expr.rexpr)}`;
  if ('ColumnRef' in n) return names(n.ColumnRef.fields).join('.');
  if ('A_Expr' in n && (n.A_Expr.kind ?? 'AEXPR_OP') === 'AEXPR_OP' && n.A_Expr.lexpr && n.A_Expr.rexpr) return `(${exprSql(n.A_Expr.lexpr)} ${names(n.A_Expr.name).join('.')} ${exprSql(n.A_Expr.rexpr)})`;
  if ('BoolExpr' in n) {
    const args = (n.BoolExpr.args ?? []).map(exprSql);
    return n.BoolExpr.boolop === 'NOT_EXPR' ? `(NOT ${args[0]})` : `(${args.join(n.BoolExpr.boolop === 'OR_EXPR' ? ' OR ' : ' AND ')})`;
  }
  if ('NullTest' in n && n.NullTest.arg) return `(${exprSql(n.NullTest.arg)} IS ${n.NullTest.nulltesttype === 'IS_NOT_NULL' ? 'NOT ' : ''}NULL)`;
  return '(expression)';
}

interface KeySpec {
  hash: string[];
  range: string[];
}

function tableKey(stmt: CreateStmt, yb: YbTableOptions | undefined): KeySpec | undefined {
  if (yb?.primaryKey) return { hash: yb.primaryKey.hash, range: yb.primaryKey.range.map((r) => r.name) };
  let cols: string[] | undefined;
  for (const elt of stmt.tableElts ?? []) {
    if ('ColumnDef' in elt) {
      for (const c of elt.ColumnDef.constraints ?? []) if ('Constraint' in c && c.Constraint.contype === 'CONSTR_PRIMARY') cols = [elt.ColumnDef.colname ?? ''];
    } else if ('Constraint' in elt && elt.Constraint.contype === 'CONSTR_PRIMARY') cols = names(elt.Constraint.keys);
  }
  if (!cols) return undefined;
  // YugabyteDB's default: the first key column is hashed, the others are range (ascending) columns.
  return { hash: cols.slice(0, 1), range: cols.slice(1) };
}

/** The one column a table CHECK expression names, if it names exactly one (PostgreSQL names the constraint after it). */
function onlyColumnRef(n: unknown, seen = new Set<string>()): string | undefined {
  if (Array.isArray(n)) n.forEach((x) => onlyColumnRef(x, seen));
  else if (n && typeof n === 'object') {
    const ref = (n as Record<string, unknown>)['ColumnRef'] as { fields?: Node[] } | undefined;
    if (ref) seen.add(names(ref.fields).at(-1) ?? '');
    else for (const v of Object.values(n)) onlyColumnRef(v, seen);
  }
  return seen.size === 1 ? [...seen][0] : undefined;
}

/**
 * CHECK constraints as stored: PostgreSQL's names (`t_col_check`, `t_check` when no column is named,
 * a number added when taken) and each expression checked now against the table's columns, so a bad
 * CHECK fails CREATE TABLE (42703 unknown column), not every later INSERT.
 */
export function checkDefs(table: string, checks: Array<{ name: string | undefined; column: string | undefined; expr: Node }>, columns: SqlColumnDef[]): SqlCheckDef[] {
  const taken = new Set<string>();
  const scope = new Scope(columns.map((c) => ({ rel: table, name: c.name, type: c.type })));
  return checks.map((c) => {
    compileExpr(c.expr, scope, { paramTypes: [], subquery: () => { throw notSupported('subqueries in CHECK constraints'); } });
    const base = c.name ?? `${table}_${c.column ? `${c.column}_` : ''}check`;
    let name = base;
    for (let i = 1; taken.has(name); i++) name = `${base}${i}`;
    taken.add(name);
    return { name, sql: exprSql(c.expr), ast: JSON.stringify(c.expr) };
  });
}

export async function createTable(stmt: CreateStmt, yb: YbTableOptions | undefined, deps: DdlDeps): Promise<{ notice?: string }> {
  const name = stmt.relation?.relname ?? '';
  if (stmt.inhRelations || stmt.partspec || stmt.partbound) throw notSupported('table inheritance and partitioning');
  if (stmt.relation?.relpersistence === 't') throw notSupported('temporary tables');
  const key = tableKey(stmt, yb);
  const columns: SqlColumnDef[] = [];
  const sequences: string[] = [];
  const checks: Array<{ name: string | undefined; column: string | undefined; expr: Node }> = [];
  for (const elt of stmt.tableElts ?? []) {
    if ('Constraint' in elt) {
      const ct = elt.Constraint.contype;
      if (ct === 'CONSTR_PRIMARY') continue;
      if (ct === 'CONSTR_CHECK' && elt.Constraint.raw_expr) {
        checks.push({ name: elt.Constraint.conname, column: onlyColumnRef(elt.Constraint.raw_expr), expr: elt.Constraint.raw_expr });
        continue;
      }
      throw notSupported(`table constraint ${ct?.replace('CONSTR_', '') ?? ''}`);
    }
    if (!('ColumnDef' in elt)) throw notSupported('this table element');
    const cd = elt.ColumnDef;
    const colname = cd.colname ?? '';
    if (columns.some((c) => c.name === colname)) throw new SqlError(SqlState.DUPLICATE_COLUMN, `column "${colname}" specified more than once`);
    const built = buildColumn(cd, name);
    checks.push(...built.checks);
    if (built.sequence) sequences.push(built.sequence);
    const col = built.col;
    columns.push(col);
  }
  if (key) for (const k of [...key.hash, ...key.range]) {
    const c = columns.find((x) => x.name === k);
    if (!c) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${k}" named in key does not exist`);
    c.notNull = true;
  }
  const hidden = !key;
  if (hidden) columns.push({ name: ROW_ID_COLUMN, type: 'int8', typmod: -1, notNull: true, hidden: true });
  const spec = hidden ? { hash: [ROW_ID_COLUMN], range: [] } : key;
  const def: SqlTableDef = { name, oid: tableOid(name), columns, hash: spec.hash, range: spec.range, stored: true, hasPrimaryKey: !hidden, ...(checks.length > 0 ? { checks: checkDefs(name, checks, columns) } : {}) };
  const existing = await deps.catalog.get(name);
  if (existing) {
    if (stmt.if_not_exists) return { notice: `relation "${name}" already exists, skipping` };
    throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${name}" already exists`);
  }
  await storeTable(def, deps, yb?.splitTablets, stmt.if_not_exists === true, yb?.splitAt);
  for (const s of sequences) await deps.sequences.create(s);
  return {};
}

type ColumnDefNode = Extract<Node, { ColumnDef: unknown }>['ColumnDef'];

/** A column of CREATE TABLE or ALTER TABLE ADD COLUMN: its SQL definition, CHECKs and the sequence of a serial. */
export function buildColumn(cd: ColumnDefNode, table: string): { col: SqlColumnDef; checks: Array<{ name: string | undefined; column: string | undefined; expr: Node }>; sequence?: string } {
  const colname = cd.colname ?? '';
  const checks: Array<{ name: string | undefined; column: string | undefined; expr: Node }> = [];
  let sequence: string | undefined;
  const { type, serial } = typeOfTypeName(cd.typeName);
  const typmod = constInt(cd.typeName?.typmods?.[0]) ?? -1;
  const col: SqlColumnDef = { name: colname, type, typmod, notNull: false, ...numericScale(type, typmod, cd.typeName?.typmods) };
  for (const c of cd.constraints ?? []) {
    if (!('Constraint' in c)) continue;
    const ct = c.Constraint.contype;
    if (ct === 'CONSTR_NOTNULL' || ct === 'CONSTR_PRIMARY') col.notNull = true;
    else if (ct === 'CONSTR_DEFAULT' && c.Constraint.raw_expr) {
      col.defaultSql = exprSql(c.Constraint.raw_expr);
      col.defaultAst = JSON.stringify(c.Constraint.raw_expr);
    }
    else if (ct === 'CONSTR_CHECK' && c.Constraint.raw_expr) checks.push({ name: c.Constraint.conname, column: colname, expr: c.Constraint.raw_expr });
    else if (ct === 'CONSTR_UNIQUE' || ct === 'CONSTR_FOREIGN') throw notSupported(`${ct === 'CONSTR_UNIQUE' ? 'UNIQUE' : 'FOREIGN KEY'} constraints`);
  }
  if (serial) {
    const seq = `${table}_${colname}_seq`;
    col.sequence = seq;
    col.defaultSql = `nextval('${seq}'::regclass)`;
    col.notNull = true;
    sequence = seq;
  }
  return { col, checks, ...(sequence ? { sequence } : {}) };
}

async function storeTable(def: SqlTableDef, deps: DdlDeps, numTablets: number | undefined, ifNotExists: boolean, splitAt?: unknown[][], splitKeys?: Uint8Array[]): Promise<void> {
  const specs: ColumnSpec[] = def.columns.map((c) => ({ name: c.name, type: TYPES[c.type].storage, nullable: !c.notNull || ![...def.hash, ...def.range].includes(c.name) }));
  try {
    await deps.client.createTable({ name: def.name, columns: specs.map((s) => ({ ...s, nullable: true })), primaryKey: { hash: def.hash, range: def.range }, ...(numTablets ? { numTablets } : {}), ...(splitAt ? { splitAt } : {}), ...(splitKeys ? { splitKeys } : {}), ifNotExists });
  } catch (e) {
    if (e instanceof DbError && e.code === ErrorCode.ALREADY_EXISTS) throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${def.name}" already exists`);
    throw e;
  }
  await deps.catalog.store(def);
}

export async function dropTables(objects: string[], ifExists: boolean, deps: DdlDeps): Promise<string[]> {
  const notices: string[] = [];
  for (const name of objects) {
    const def = await deps.catalog.get(name);
    if (!def) {
      if (ifExists) {
        notices.push(`table "${name}" does not exist, skipping`);
        continue;
      }
      throw new SqlError(SqlState.UNDEFINED_TABLE, `table "${name}" does not exist`);
    }
    await deps.client.dropTable(name, { ifExists: true });
    for (const ix of def.indexes ?? []) await deps.client.dropTable(ix.storage, { ifExists: true });
    if (def.stored) await deps.catalog.remove(name);
    deps.catalog.invalidate(name);
    for (const c of def.columns) if (c.sequence) await deps.sequences.drop(c.sequence);
  }
  return notices;
}

/** TRUNCATE: drop and create the tessera table again (the SQL definition and sequences stay). */
export async function truncateTable(name: string, deps: DdlDeps): Promise<void> {
  const def = await deps.catalog.require(name);
  if (!def.stored) throw notSupported('TRUNCATE of a table created outside SQL');
  const locs = await deps.client.tableLocations(name);
  // The same tablets again: a range table's by its tablets' boundaries (split points, SPLIT AT
  // or later splits), a hash table's by their count.
  const range = def.hash.length === 0 && locs.tablets.length > 1;
  const splitKeys = range ? locs.tablets.slice(1).map((t) => t.keyStart ?? new Uint8Array(0)) : undefined;
  if (splitKeys?.some((k) => k.length === 0)) throw new SqlError(SqlState.INTERNAL, `TRUNCATE ${name}: a tablet of the range table has no start key`);
  await deps.client.dropTable(name, { ifExists: true });
  await storeTable(def, deps, range ? undefined : locs.tablets.length, false, undefined, splitKeys);
  // Each index table is emptied the same way: dropped and made again with its own key.
  for (const ix of def.indexes ?? []) {
    const loc = await deps.client.tableLocations(ix.storage);
    await deps.client.dropTable(ix.storage, { ifExists: true });
    await deps.client.createTable({ name: ix.storage, columns: loc.schema.columns.map((c) => ({ name: c.name, type: c.type, nullable: true })), primaryKey: { hash: [], range: loc.schema.range.map((c) => c.name) } });
  }
}

/** ALTER TABLE t ADD PRIMARY KEY (cols): rebuild into a table keyed by cols, then swap names. */
export async function addPrimaryKey(name: string, cols: string[], deps: DdlDeps): Promise<void> {
  const def = await deps.catalog.require(name);
  if (def.hasPrimaryKey) throw new SqlError(SqlState.INVALID_TABLE_DEFINITION, `multiple primary keys for table "${name}" are not allowed`);
  // Index entries hold the primary key: a table with indexes would need every index rebuilt too.
  if ((def.indexes?.length ?? 0) > 0) throw notSupported(`ALTER TABLE ADD PRIMARY KEY on a table with indexes (drop ${def.indexes!.map((i) => i.name).join(', ')} first)`);
  for (const k of cols) if (!def.columns.some((c) => c.name === k)) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${k}" of relation "${name}" does not exist`);
  const columns = def.columns.filter((c) => !c.hidden).map((c) => (cols.includes(c.name) ? { ...c, notNull: true } : c));
  const tmp = `${name}__rebuild_${Date.now()}`;
  const next: SqlTableDef = { ...def, name: tmp, columns, hash: cols.slice(0, 1), range: cols.slice(1), hasPrimaryKey: true };
  const locs = await deps.client.tableLocations(name);
  await storeTable(next, deps, locs.tablets.length, false);
  const seen = new Set<string>();
  const batch: Array<Record<string, import('../../client').ColumnValue>> = [];
  // Up to REBUILD_BATCHES_IN_FLIGHT batches are written while the scan reads on.
  const writes = new WritePipeline(REBUILD_BATCHES_IN_FLIGHT);
  const flush = async (): Promise<void> => {
    if (batch.length > 0) await writes.add(deps.client.table(tmp).upsertMany(batch.splice(0), { timeoutMs: REBUILD_TIMEOUT_MS }));
  };
  // One key column (pgbench's): its text is the duplicate check's key, no JSON per row.
  const keyOf = cols.length === 1 ? (r: Row): string => String(r[cols[0]!]) : (r: Row): string => JSON.stringify(cols.map((c) => String(r[c])));
  for await (const page of deps.client.table(name).scanRowPages({ timeoutMs: REBUILD_TIMEOUT_MS, pageSize: REBUILD_BATCH_ROWS })) {
    for (const r of page) {
      if (cols.some((c) => r[c] === null || r[c] === undefined)) throw new SqlError(SqlState.NOT_NULL_VIOLATION, `column "${cols.find((c) => r[c] === null)}" of relation "${name}" contains null values`);
      const k = keyOf(r);
      if (seen.has(k)) {
        await writes.settle();
        await deps.client.dropTable(tmp, { ifExists: true });
        await deps.catalog.remove(tmp);
        throw new SqlError(SqlState.UNIQUE_VIOLATION, `could not create unique index "${name}_pkey"`, { detail: `Key (${cols.join(', ')})=(${cols.map((c) => String(r[c])).join(', ')}) is duplicated.` });
      }
      seen.add(k);
      delete r[ROW_ID_COLUMN]; // the page's rows are this loop's own
      batch.push(r);
    }
    if (batch.length >= REBUILD_BATCH_ROWS) await flush();
  }
  await flush();
  await writes.drain();
  await deps.client.dropTable(name);
  await deps.client.alterTable(tmp, { renameTo: name });
  await deps.catalog.remove(tmp);
  await deps.catalog.store({ ...next, name });
}

/** numeric(p [, s]): the scale (0 when only p is given), checked as PostgreSQL does (22023 outside 1..1000, 0..p). */
function numericScale(type: SqlTypeName, precision: number, typmods: Node[] | undefined): { scale?: number } {
  if (type !== 'numeric' || precision < 0) return {};
  const scale = constInt(typmods?.[1]) ?? 0;
  if (precision < 1 || precision > 1000) throw new SqlError(SqlState.INVALID_PARAMETER, `NUMERIC precision ${precision} must be between 1 and 1000`);
  // PostgreSQL 15 allows a scale above the precision (numeric(3, 5) holds 0.00123); a negative one tessera does not round to.
  if (scale < 0) throw notSupported('a negative NUMERIC scale');
  if (scale > 1000) throw new SqlError(SqlState.INVALID_PARAMETER, `NUMERIC scale ${scale} must be between -1000 and 1000`);
  return { scale };
}
