/**
 * ALTER TABLE (docs/sql.md, "ALTER TABLE") over tessera's online schema change (the master's
 * alterTable: a new schema version the tablets take without stopping writes): ADD COLUMN [IF NOT
 * EXISTS] with DEFAULT (existing rows filled) and NOT NULL, DROP COLUMN [IF EXISTS] (its indexes and
 * CHECKs go with it, as in PostgreSQL), RENAME COLUMN, RENAME TO, ALTER COLUMN SET/DROP DEFAULT and
 * SET/DROP NOT NULL, ADD PRIMARY KEY (a rebuild, ddl.ts). The SQL definition follows each change.
 */
import type { Row } from '../../client';
import type { Node } from '../sql-parser';
import { names } from './ast';
import { tableOid, type SqlTableDef } from './catalog';
import { addPrimaryKey, buildColumn, checkDefs, exprSql, REBUILD_BATCH_ROWS, REBUILD_BATCHES_IN_FLIGHT, REBUILD_TIMEOUT_MS, type DdlDeps } from './ddl';
import { compileExpr } from './expr';
import { Scope, type EvalContext } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';
import { toStorage, TYPES } from './sql-types';
import { WritePipeline } from './write-pipeline';

type AlterCmd = Extract<Node, { AlterTableCmd: unknown }>['AlterTableCmd'];
type RenameStmt = Extract<Node, { RenameStmt: unknown }>['RenameStmt'];

const undefinedColumn = (table: string, col: string): SqlError => new SqlError(SqlState.UNDEFINED_COLUMN, `column "${col}" of relation "${table}" does not exist`);

/** ALTER TABLE name cmd, …: each command in order; a notice per skipped IF [NOT] EXISTS. */
export async function alterTable(a: Extract<Node, { AlterTableStmt: unknown }>['AlterTableStmt'], deps: DdlDeps, ctx: EvalContext): Promise<string[]> {
  const name = a.relation?.relname ?? '';
  const notices: string[] = [];
  const def0 = await deps.catalog.get(name);
  if (!def0) {
    if (a.missing_ok) return [`relation "${name}" does not exist, skipping`];
    throw new SqlError(SqlState.UNDEFINED_TABLE, `relation "${name}" does not exist`);
  }
  for (const c of a.cmds ?? []) {
    if (!('AlterTableCmd' in c)) continue;
    const cmd = c.AlterTableCmd;
    const def = await deps.catalog.require(name);
    if (!def.stored) throw notSupported(`ALTER TABLE of a table created outside SQL (use the client's alterTable)`);
    switch (cmd.subtype) {
      case 'AT_AddConstraint':
        if (cmd.def && 'Constraint' in cmd.def && cmd.def.Constraint.contype === 'CONSTR_PRIMARY') await addPrimaryKey(name, names(cmd.def.Constraint.keys), deps);
        else throw notSupported(`ALTER TABLE ADD CONSTRAINT ${cmd.def && 'Constraint' in cmd.def ? (cmd.def.Constraint.contype ?? '').replace('CONSTR_', '') : ''}`);
        break;
      case 'AT_AddColumn': notices.push(...(await addColumn(def, cmd, deps, ctx))); break;
      case 'AT_DropColumn': notices.push(...(await dropColumn(def, cmd, deps))); break;
      case 'AT_ColumnDefault': await setDefault(def, cmd, deps); break;
      case 'AT_SetNotNull': case 'AT_DropNotNull': await setNotNull(def, cmd, deps); break;
      default: throw notSupported(`ALTER TABLE ${(cmd.subtype ?? '').replace('AT_', '')}`);
    }
  }
  return notices;
}

async function addColumn(def: SqlTableDef, cmd: AlterCmd, deps: DdlDeps, ctx: EvalContext): Promise<string[]> {
  const cd = cmd.def && 'ColumnDef' in cmd.def ? cmd.def.ColumnDef : undefined;
  if (!cd) throw notSupported('this ADD COLUMN');
  const colname = cd.colname ?? '';
  if (def.columns.some((c) => c.name === colname && !c.hidden)) {
    if (cmd.missing_ok) return [`column "${colname}" of relation "${def.name}" already exists, skipping`];
    throw new SqlError(SqlState.DUPLICATE_COLUMN, `column "${colname}" of relation "${def.name}" already exists`);
  }
  if ((cd.constraints ?? []).some((c) => 'Constraint' in c && c.Constraint.contype === 'CONSTR_PRIMARY')) throw notSupported('ADD COLUMN … PRIMARY KEY (use ADD PRIMARY KEY on a table without one)');
  const built = buildColumn(cd, def.name);
  if (built.sequence) throw notSupported('ADD COLUMN of a serial column');
  const checks = built.checks.length > 0 ? checkDefs(def.name, built.checks, [...def.columns, built.col]) : [];
  const taken = new Set((def.checks ?? []).map((c) => c.name));
  for (const c of checks) for (let i = 1, base = c.name; taken.has(c.name); i++) c.name = `${base}${i}`;
  await deps.client.alterTable(def.name, { addColumns: [{ name: colname, type: TYPES[built.col.type].storage }] });
  const next: SqlTableDef = { ...def, columns: [...def.columns, built.col], ...(checks.length > 0 ? { checks: [...(def.checks ?? []), ...checks] } : {}) };
  await deps.catalog.store(next);
  // Existing rows get the DEFAULT (each row its own value, as PostgreSQL evaluates a volatile one per row).
  if (built.col.defaultAst || built.col.notNull || checks.length > 0) await fillColumn(next, colname, deps, ctx, def);
  return [];
}

/**
 * Writes the new column's DEFAULT into every existing row, checking NOT NULL and the column's CHECKs
 * on the way; on a failure the column is dropped again (PostgreSQL's ALTER is atomic). A row written
 * by a session during the fill already has the column (the definition was stored first); the fill
 * writes only the new column.
 */
async function fillColumn(next: SqlTableDef, colname: string, deps: DdlDeps, ctx: EvalContext, prev: SqlTableDef): Promise<void> {
  const col = next.columns.find((c) => c.name === colname)!;
  const env = { paramTypes: [], subquery: () => { throw notSupported('subqueries in DEFAULT'); } };
  const dflt = col.defaultAst ? compileExpr(JSON.parse(col.defaultAst) as Node, new Scope([]), env) : undefined;
  const keys = [...next.hash, ...next.range];
  const checks = (next.checks ?? []).filter((c) => !(prev.checks ?? []).some((p) => p.name === c.name)).map((c) => ({ name: c.name, e: compileExpr(JSON.parse(c.ast) as Node, new Scope(next.columns.map((x) => ({ rel: next.name, name: x.name, type: x.type }))), env) }));
  const writes = new WritePipeline(REBUILD_BATCHES_IN_FLIGHT);
  const t = deps.client.table(next.name);
  try {
    for await (const page of t.scanRowPages({ timeoutMs: REBUILD_TIMEOUT_MS, pageSize: REBUILD_BATCH_ROWS })) {
      const batch: Row[] = [];
      for (const r of page) {
        const v = dflt ? toStorage(dflt.eval([], ctx), col.type) : null;
        if (v === null && col.notNull) throw new SqlError(SqlState.NOT_NULL_VIOLATION, `column "${colname}" of relation "${next.name}" contains null values`);
        const values = next.columns.map((c) => (c.name === colname ? v : (r[c.name] ?? null)));
        for (const c of checks) if (c.e.eval(values, ctx) === false) throw new SqlError(SqlState.CHECK_VIOLATION, `check constraint "${c.name}" of relation "${next.name}" is violated by some row`);
        if (v !== null) batch.push({ ...Object.fromEntries(keys.map((k) => [k, r[k] ?? null])), [colname]: v });
      }
      if (batch.length > 0) await writes.add(t.upsertMany(batch, { timeoutMs: REBUILD_TIMEOUT_MS }));
    }
    await writes.drain();
  } catch (e) {
    await writes.settle();
    await deps.client.alterTable(next.name, { dropColumns: [colname] });
    await deps.catalog.store(prev);
    throw e;
  }
}

async function dropColumn(def: SqlTableDef, cmd: AlterCmd, deps: DdlDeps): Promise<string[]> {
  const colname = cmd.name ?? '';
  const col = def.columns.find((c) => c.name === colname && !c.hidden);
  if (!col) {
    if (cmd.missing_ok) return [`column "${colname}" of relation "${def.name}" does not exist, skipping`];
    throw undefinedColumn(def.name, colname);
  }
  if ([...def.hash, ...def.range].includes(colname)) throw notSupported('dropping a primary key column');
  if (def.columns.filter((c) => !c.hidden).length === 1) throw notSupported('dropping the last column of a table');
  // Indexes and CHECKs on the column go with it (PostgreSQL drops them too).
  const gone = (def.indexes ?? []).filter((ix) => ix.columns.includes(colname));
  for (const ix of gone) await deps.client.dropTable(ix.storage, { ifExists: true });
  const mentions = (ast: string): boolean => { let hit = false; mapColumnRefs(JSON.parse(ast), (c) => { hit ||= c === colname; return c; }); return hit; };
  await deps.client.alterTable(def.name, { dropColumns: [colname] });
  const indexes = (def.indexes ?? []).filter((ix) => !gone.includes(ix));
  const checks = (def.checks ?? []).filter((c) => !mentions(c.ast));
  const { indexes: _i, checks: _c, ...rest } = def;
  await deps.catalog.store({ ...rest, columns: def.columns.filter((c) => c !== col), ...(indexes.length > 0 ? { indexes } : {}), ...(checks.length > 0 ? { checks } : {}) });
  if (col.sequence) await deps.sequences.drop(col.sequence);
  return [];
}

async function setDefault(def: SqlTableDef, cmd: AlterCmd, deps: DdlDeps): Promise<void> {
  const i = def.columns.findIndex((c) => c.name === cmd.name && !c.hidden);
  if (i < 0) throw undefinedColumn(def.name, cmd.name ?? '');
  const { defaultSql: _s, defaultAst: _a, ...col } = def.columns[i]!;
  const next = cmd.def ? { ...col, defaultSql: exprSql(cmd.def), defaultAst: JSON.stringify(cmd.def) } : col;
  await deps.catalog.store({ ...def, columns: def.columns.map((c, k) => (k === i ? next : c)) });
}

async function setNotNull(def: SqlTableDef, cmd: AlterCmd, deps: DdlDeps): Promise<void> {
  const i = def.columns.findIndex((c) => c.name === cmd.name && !c.hidden);
  if (i < 0) throw undefinedColumn(def.name, cmd.name ?? '');
  const on = cmd.subtype === 'AT_SetNotNull';
  if (!on && [...def.hash, ...def.range].includes(cmd.name ?? '')) throw new SqlError(SqlState.INVALID_TABLE_DEFINITION, `column "${cmd.name}" is in a primary key`);
  if (on) {
    for await (const page of deps.client.table(def.name).scanRowPages({ timeoutMs: REBUILD_TIMEOUT_MS, pageSize: REBUILD_BATCH_ROWS, columns: [cmd.name ?? ''] })) {
      if (page.some((r) => r[cmd.name ?? ''] === null || r[cmd.name ?? ''] === undefined)) throw new SqlError(SqlState.NOT_NULL_VIOLATION, `column "${cmd.name}" of relation "${def.name}" contains null values`);
    }
  }
  await deps.catalog.store({ ...def, columns: def.columns.map((c, k) => (k === i ? { ...c, notNull: on } : c)) });
}

/** ALTER TABLE t RENAME [COLUMN] a TO b, ALTER TABLE t RENAME TO u. */
export async function renameObject(r: RenameStmt, deps: DdlDeps): Promise<string[]> {
  const name = r.relation?.relname ?? '';
  const def = await deps.catalog.get(name);
  if (!def) {
    if (r.missing_ok) return [`relation "${name}" does not exist, skipping`];
    throw new SqlError(SqlState.UNDEFINED_TABLE, `relation "${name}" does not exist`);
  }
  if (!def.stored) throw notSupported('renaming a table created outside SQL');
  const to = r.newname ?? '';
  if (r.renameType === 'OBJECT_TABLE') {
    if (await deps.catalog.get(to)) throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${to}" already exists`);
    await deps.client.alterTable(name, { renameTo: to });
    await deps.catalog.remove(name);
    deps.catalog.invalidate(name);
    // tessera's OIDs follow the name ('t'::regclass is computed from it), so a renamed table takes its new name's.
    await deps.catalog.store({ ...def, name: to, oid: tableOid(to) });
    return [];
  }
  if (r.renameType !== 'OBJECT_COLUMN') throw notSupported(`RENAME of ${(r.renameType ?? '').replace('OBJECT_', '').toLowerCase()}`);
  const from = r.subname ?? '';
  if (!def.columns.some((c) => c.name === from && !c.hidden)) throw undefinedColumn(name, from);
  if (def.columns.some((c) => c.name === to)) throw new SqlError(SqlState.DUPLICATE_COLUMN, `column "${to}" of relation "${name}" already exists`);
  await deps.client.alterTable(name, { renameColumns: [{ from, to }] });
  // Index tables name their columns after the table's: the ones holding the column are renamed too.
  const rename = (c: string): string => (c === from ? to : c);
  for (const ix of def.indexes ?? []) {
    const holds = ix.columns.includes(from) || [...def.hash, ...def.range].includes(from);
    if (holds) await deps.client.alterTable(ix.storage, { renameColumns: [{ from, to }] });
  }
  const renameAst = (ast: string): string => JSON.stringify(mapColumnRefs(JSON.parse(ast), rename));
  await deps.catalog.store({
    ...def,
    columns: def.columns.map((c) => (c.name === from ? { ...c, name: to } : c)),
    hash: def.hash.map(rename),
    range: def.range.map(rename),
    ...(def.indexes ? { indexes: def.indexes.map((ix) => ({ ...ix, columns: ix.columns.map(rename) })) } : {}),
    ...(def.checks ? { checks: def.checks.map((c) => ({ ...c, ast: renameAst(c.ast), sql: exprSql(JSON.parse(renameAst(c.ast)) as Node) })) } : {}),
  });
  return [];
}

/** `n` with the last name of every ColumnRef mapped by `f` (string constants are left alone). */
function mapColumnRefs(n: unknown, f: (col: string) => string): unknown {
  if (Array.isArray(n)) return n.map((x) => mapColumnRefs(x, f));
  if (!n || typeof n !== 'object') return n;
  const o = n as Record<string, unknown>;
  if (o['ColumnRef'] && typeof o['ColumnRef'] === 'object') {
    const ref = o['ColumnRef'] as { fields?: Array<{ String?: { sval?: string } }> };
    const fields = (ref.fields ?? []).map((x, i, all) => (i === all.length - 1 && x.String?.sval !== undefined ? { String: { sval: f(x.String.sval) } } : x));
    return { ...o, ColumnRef: { ...ref, fields } };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, mapColumnRefs(v, f)]));
}
