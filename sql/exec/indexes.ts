/**
 * Secondary indexes (docs/sql.md, "Indexes"), as YugabyteDB keeps them: each index is a tessera table
 * of its own, range-partitioned on the indexed columns, written in the same distributed transaction as
 * the row (the statement's own transaction, or the session's), so a reader never sees a row without its
 * index entry or the reverse.
 *
 *   non-unique   key (indexed columns…, primary key columns…): one entry per row
 *   UNIQUE       key (indexed columns…), the primary key columns as values: a second row with the same
 *                values meets the first one's entry (23505), or its uncommitted intent (40001)
 *
 * A row with NULL in an indexed column has no entry (NULLs are never equal, so UNIQUE allows many, as
 * in PostgreSQL), and the planner only uses an index for `=`, `<`, `<=`, `>`, `>=` against non-null
 * constants, which such rows could never match.
 */
import type { Row, Table, TesseraClient } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import { INDEX_TABLE_PREFIX, type SqlCatalog, type SqlIndexDef, type SqlTableDef } from './catalog';
import { SqlError, SqlState } from './sql-error';

export function indexTableName(index: string): string {
  return INDEX_TABLE_PREFIX + index;
}

export function isIndexTable(name: string): boolean {
  return name.startsWith(INDEX_TABLE_PREFIX);
}

/** Primary key columns kept in the index entry beside the indexed ones (those not indexed already). */
export function pkRest(def: SqlTableDef, ix: SqlIndexDef): string[] {
  return [...def.hash, ...def.range].filter((c) => !ix.columns.includes(c));
}

/** The index entry of a storage row, or undefined when an indexed column is NULL. */
export function indexEntry(def: SqlTableDef, ix: SqlIndexDef, row: Row): Row | undefined {
  const e: Row = {};
  for (const c of ix.columns) {
    const v = row[c];
    if (v === null || v === undefined) return undefined;
    e[c] = v;
  }
  for (const c of pkRest(def, ix)) e[c] = row[c] ?? null;
  return e;
}

/** The entries of `rows` (rows with a NULL indexed column have none). */
function entriesOf(def: SqlTableDef, ix: SqlIndexDef, rows: readonly Row[]): Row[] {
  const out: Row[] = [];
  for (const r of rows) {
    const e = indexEntry(def, ix, r);
    if (e) out.push(e);
  }
  return out;
}

/** The key of an index entry (what identifies it for a delete). */
export function entryKey(def: SqlTableDef, ix: SqlIndexDef, e: Row): Row {
  const cols = ix.unique ? ix.columns : [...ix.columns, ...pkRest(def, ix)];
  return Object.fromEntries(cols.map((c) => [c, e[c]!]));
}

/** The base table's primary key of an index entry. */
export function baseKeyOf(def: SqlTableDef, e: Row): Row {
  return Object.fromEntries([...def.hash, ...def.range].map((c) => [c, e[c]!]));
}

export function uniqueViolation(ix: SqlIndexDef, e: Row): SqlError {
  return new SqlError(SqlState.UNIQUE_VIOLATION, `duplicate key value violates unique constraint "${ix.name}"`, { detail: `Key (${ix.columns.join(', ')})=(${ix.columns.map((c) => String(e[c])).join(', ')}) already exists.` });
}

async function putEntries(ix: SqlIndexDef, t: Table, entries: Row[]): Promise<void> {
  if (entries.length === 0) return;
  if (!ix.unique) {
    await t.upsertMany(entries);
    return;
  }
  await Promise.all(entries.map(async (e) => {
    try {
      // Sent at once in a block that keeps writes back: the duplicate is this statement's error.
      await t.insert(e, { keepBack: false });
    } catch (err) {
      if (err instanceof DbError && err.code === ErrorCode.ALREADY_EXISTS) throw uniqueViolation(ix, e);
      throw err;
    }
  }));
}

export type TableOf = (name: string) => Table;

/** Entries for new rows (after the rows themselves were written, in the same transaction). */
export async function indexInsert(def: SqlTableDef, tableOf: TableOf, rows: readonly Row[]): Promise<void> {
  for (const ix of def.indexes ?? []) {
    if (ix.state === 'delete_only') continue;
    const entries = entriesOf(def, ix, rows);
    checkUniqueInStatement(ix, entries);
    await putEntries(ix, tableOf(ix.storage), entries);
  }
}

/** Entries of rows being deleted (their values as read). */
export async function indexDelete(def: SqlTableDef, tableOf: TableOf, rows: readonly Row[]): Promise<void> {
  for (const ix of def.indexes ?? []) {
    const t = tableOf(ix.storage);
    await Promise.all(entriesOf(def, ix, rows).map((e) => t.delete(entryKey(def, ix, e))));
  }
}

/** Rows updated from `old` to `next` (full rows): entries whose indexed values changed move. */
export async function indexUpdate(def: SqlTableDef, tableOf: TableOf, pairs: ReadonlyArray<{ old: Row; next: Row }>): Promise<void> {
  for (const ix of def.indexes ?? []) {
    const t = tableOf(ix.storage);
    const moved = pairs.filter((p) => ix.columns.some((c) => !sameValue(p.old[c], p.next[c])));
    if (moved.length === 0) continue;
    await Promise.all(entriesOf(def, ix, moved.map((p) => p.old)).map((e) => t.delete(entryKey(def, ix, e))));
    if (ix.state === 'delete_only') continue;
    const fresh = entriesOf(def, ix, moved.map((p) => p.next));
    checkUniqueInStatement(ix, fresh);
    await putEntries(ix, t, fresh);
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.from(a).equals(Buffer.from(b));
  return (a ?? null) === (b ?? null);
}

/** Two rows of one statement with the same UNIQUE values: 23505 before anything is sent (an upsert would hide it). */
function checkUniqueInStatement(ix: SqlIndexDef, entries: readonly Row[]): void {
  if (!ix.unique || entries.length < 2) return;
  const seen = new Set<string>();
  for (const e of entries) {
    const k = JSON.stringify(ix.columns.map((c) => valueText(e[c])));
    if (seen.has(k)) throw uniqueViolation(ix, e);
    seen.add(k);
  }
}

export function valueText(v: unknown): string {
  if (v instanceof Uint8Array) return `\\x${Buffer.from(v).toString('hex')}`;
  return typeof v === 'bigint' ? `${v}n` : JSON.stringify(v);
}

export interface IndexDdlDeps {
  client: TesseraClient;
  catalog: SqlCatalog;
  /** How long each build step waits to reach every server (index-build.ts; default the catalog cache's lifetime). */
  stateWaitMs?: number;
}

/** The table that owns index `name`, if any. */
export async function indexOwner(name: string, catalog: SqlCatalog): Promise<SqlTableDef | undefined> {
  return (await catalog.list()).find((d) => (d.indexes ?? []).some((i) => i.name === name));
}

/** DROP INDEX [IF EXISTS] names. */
export async function dropIndexes(objects: string[], ifExists: boolean, deps: IndexDdlDeps): Promise<string[]> {
  const notices: string[] = [];
  for (const name of objects) {
    const def = await indexOwner(name, deps.catalog);
    if (!def) {
      if (ifExists) {
        notices.push(`index "${name}" does not exist, skipping`);
        continue;
      }
      throw new SqlError(SqlState.UNDEFINED_OBJECT, `index "${name}" does not exist`);
    }
    const ix = def.indexes!.find((i) => i.name === name)!;
    // The catalog first: no new write maintains the index once it is gone from the definition.
    await deps.catalog.store({ ...def, indexes: def.indexes!.filter((i) => i.name !== name) });
    await deps.client.dropTable(ix.storage, { ifExists: true });
  }
  return notices;
}
