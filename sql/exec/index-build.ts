/**
 * Online CREATE INDEX (docs/sql.md, "Building an index online"), after YugabyteDB's index
 * permissions. A server's SQL catalog cache may hold a table's definition for CATALOG_CACHE_TTL_MS,
 * so each step is recorded in the catalog and the build waits that long (plus a margin) before the
 * next, by which time every server writes by the new rules:
 *
 *   1. delete_only        writers delete the entries of rows they delete or change, insert none
 *   2. write_and_delete   writers maintain entries fully (and check UNIQUE against them)
 *   3. backfilling        the keys of every row as of a read time taken after step 2 reached every
 *                         server; per batch, a transaction reads each row's current values and
 *                         writes its entry. A writer changing the row meanwhile writes the same entry
 *                         key (its old entry's delete, or the same insert), so one of the two
 *                         transactions conflicts and the backfill retries the batch: no row is
 *                         missed, no stale entry is left.
 *   4. ready              queries read it (EXPLAIN shows it)
 *
 * Step 1 exists so that no server deletes a row without its entry while another already inserts
 * entries (a dangling UNIQUE entry would refuse a later insert). A UNIQUE index meeting two rows
 * with the same values fails with 23505 and is removed (catalog entry and table). Progress is in
 * pg_stat_progress_create_index on the building server.
 */
import type { Row, TesseraClient } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import { htFrom } from '../../common/hybrid-time';
import { CATALOG_CACHE_TTL_MS, type IndexState, type SqlCatalog, type SqlIndexDef, type SqlTableDef } from './catalog';
import { baseKeyOf, entryKey, indexEntry, indexOwner, indexTableName, pkRest, valueText, type IndexDdlDeps } from './indexes';
import { notSupported, SqlError, SqlState } from './sql-error';
import { TYPES } from './sql-types';

/** Deadline of the key scan and of each backfill batch. */
export const BACKFILL_TIMEOUT_MS = 600_000;
/** Rows read and indexed by one backfill transaction. */
export const BACKFILL_BATCH_ROWS = 500;
/** Attempts of one batch that meets concurrent writers (each conflict aborts it; it is retried). */
const BATCH_ATTEMPTS_MAX = 50;
/** Margin beyond the catalog cache's lifetime before the next step. */
const STATE_WAIT_MARGIN_MS = 300;

export interface IndexBuildDeps {
  client: TesseraClient;
  catalog: SqlCatalog;
  /** How long a step takes to reach every server (default: the catalog cache's lifetime plus a margin). */
  stateWaitMs?: number;
}

/** One build in progress on this server (pg_stat_progress_create_index). */
export interface IndexBuildProgress {
  table: SqlTableDef;
  index: SqlIndexDef;
  phase: string;
  rowsDone: number;
  rowsSeen: number;
}

/** Builds running in this process, by index name. */
export const indexBuilds = new Map<string, IndexBuildProgress>();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Record `ix` in `table`'s definition with `state` (re-read fresh: other DDL may have changed it). */
async function setState(table: string, ix: SqlIndexDef, state: IndexState, catalog: SqlCatalog): Promise<SqlTableDef> {
  catalog.invalidate(table);
  const def = await catalog.require(table);
  const next: SqlIndexDef = { ...ix, state };
  if (state === 'ready') delete next.state;
  const indexes = [...(def.indexes ?? []).filter((i) => i.name !== ix.name), next];
  const stored = { ...def, stored: true, indexes };
  await catalog.store(stored);
  return stored;
}

async function removeIndex(table: string, ix: SqlIndexDef, deps: IndexBuildDeps): Promise<void> {
  deps.catalog.invalidate(table);
  const def = await deps.catalog.get(table);
  if (def) await deps.catalog.store({ ...def, indexes: (def.indexes ?? []).filter((i) => i.name !== ix.name) });
  await deps.client.dropTable(ix.storage, { ifExists: true });
}

/** Steps 1–4 for an index whose (empty) table exists; on failure the index is gone. */
export async function buildIndexOnline(def: SqlTableDef, ix: SqlIndexDef, deps: IndexBuildDeps): Promise<void> {
  const waitMs = deps.stateWaitMs ?? CATALOG_CACHE_TTL_MS + STATE_WAIT_MARGIN_MS;
  const progress: IndexBuildProgress = { table: def, index: ix, phase: 'initializing', rowsDone: 0, rowsSeen: 0 };
  indexBuilds.set(ix.name, progress);
  try {
    await setState(def.name, ix, 'delete_only', deps.catalog);
    progress.phase = 'waiting for writers before build';
    await sleep(waitMs);
    await setState(def.name, ix, 'write_and_delete', deps.catalog);
    await sleep(waitMs);
    const current = await setState(def.name, ix, 'backfilling', deps.catalog);
    progress.phase = 'building index: backfill';
    await backfill(current, ix, deps.client, progress);
    progress.phase = 'marking ready';
    await setState(def.name, ix, 'ready', deps.catalog);
  } catch (e) {
    await removeIndex(def.name, ix, deps).catch(() => undefined);
    throw e;
  } finally {
    indexBuilds.delete(ix.name);
  }
}

const RETRYABLE = new Set<string>([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED, ErrorCode.TXN_EXPIRED, ErrorCode.READ_RESTART]);

/** Step 3: every row's key as of a read time after step 2, then batches of transactional reads and entry writes. */
async function backfill(def: SqlTableDef, ix: SqlIndexDef, client: TesseraClient, progress: IndexBuildProgress): Promise<void> {
  const keyCols = [...def.hash, ...def.range];
  // Every row committed before now was written by a server that did not yet maintain the index; every
  // later one by a server that does. Reading at a fixed time keeps the scan free of read restarts.
  const readHt = htFrom(BigInt(Date.now()) * 1000n);
  let batch: Row[] = [];
  for await (const r of client.table(def.name).scanRows({ columns: keyCols.slice(0, 1), readHt, timeoutMs: BACKFILL_TIMEOUT_MS })) {
    batch.push(baseKeyOf(def, r));
    progress.rowsSeen++;
    if (batch.length >= BACKFILL_BATCH_ROWS) {
      await backfillBatch(def, ix, client, batch);
      progress.rowsDone += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) await backfillBatch(def, ix, client, batch);
  progress.rowsDone += batch.length;
}

async function backfillBatch(def: SqlTableDef, ix: SqlIndexDef, client: TesseraClient, keys: readonly Row[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const txn = await client.beginTransaction({ isolation: 'snapshot' });
    try {
      const rows = await Promise.all(keys.map((k) => txn.table(def.name).get(k, { timeoutMs: BACKFILL_TIMEOUT_MS })));
      const entries = rows.flatMap((r) => (r ? [indexEntry(def, ix, r)].filter((e): e is Row => e !== undefined) : []));
      const t = txn.table(ix.storage);
      if (ix.unique) duplicatesInBatch(ix, entries);
      if (ix.unique) await Promise.all(entries.map((e) => putUniqueEntry(def, ix, t, e)));
      else if (entries.length > 0) await t.upsertMany(entries, { timeoutMs: BACKFILL_TIMEOUT_MS });
      await txn.commit();
      return;
    } catch (e) {
      await txn.abort().catch(() => undefined);
      // ALREADY_EXISTS: a writer committed the entry after this batch looked; the next attempt sees whose it is.
      if (!(e instanceof DbError) || !(RETRYABLE.has(e.code) || e.code === ErrorCode.ALREADY_EXISTS) || attempt >= BATCH_ATTEMPTS_MAX) throw e;
      // Writers hold the rows: let them finish (bounded, growing) before reading the batch again.
      await sleep(Math.min(1000, 10 * attempt));
    }
  }
}

function duplicated(ix: SqlIndexDef, e: Row): SqlError {
  return new SqlError(SqlState.UNIQUE_VIOLATION, `could not create unique index "${ix.name}"`, { detail: `Key (${ix.columns.join(', ')})=(${ix.columns.map((c) => String(e[c])).join(', ')}) is duplicated.` });
}

function duplicatesInBatch(ix: SqlIndexDef, entries: readonly Row[]): void {
  const seen = new Set<string>();
  for (const e of entries) {
    const k = JSON.stringify(ix.columns.map((c) => valueText(e[c])));
    if (seen.has(k)) throw duplicated(ix, e);
    seen.add(k);
  }
}

/** A UNIQUE entry: absent — written; the same row's — kept; another row's — the build fails. */
async function putUniqueEntry(def: SqlTableDef, ix: SqlIndexDef, t: ReturnType<TesseraClient['table']>, e: Row): Promise<void> {
  const have = await t.get(entryKey(def, ix, e), { timeoutMs: BACKFILL_TIMEOUT_MS });
  if (!have) {
    await t.insert(e, { timeoutMs: BACKFILL_TIMEOUT_MS });
    return;
  }
  const same = [...def.hash, ...def.range].every((c) => valueText(have[c] ?? null) === valueText(e[c] ?? null));
  if (!same) throw duplicated(ix, e);
}

type IndexStmt = Extract<import('../sql-parser').Node, { IndexStmt: unknown }>['IndexStmt'];

/**
 * CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON t (c, …): the index table, then the online build
 * (index-build.ts): writers on every server maintain it before the rows already there are backfilled.
 */
export async function createIndex(stmt: IndexStmt, deps: IndexDdlDeps): Promise<{ notice?: string }> {
  const tableName = stmt.relation?.relname ?? '';
  const def = await deps.catalog.require(tableName, stmt.relation?.location);
  if (stmt.whereClause) throw notSupported('partial indexes (CREATE INDEX … WHERE)');
  if ((stmt.indexIncludingParams?.length ?? 0) > 0) throw notSupported('INCLUDE columns of an index');
  if (stmt.accessMethod && !['btree', 'lsm', 'hash'].includes(stmt.accessMethod)) throw notSupported(`index access method "${stmt.accessMethod}"`);
  const columns = (stmt.indexParams ?? []).map((p) => {
    if (!('IndexElem' in p) || !p.IndexElem.name) throw notSupported('indexes on expressions');
    const name = p.IndexElem.name;
    if (!def.columns.some((c) => c.name === name && !c.hidden)) throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${name}" does not exist`);
    return name;
  });
  if (columns.length === 0 || new Set(columns).size !== columns.length) throw new SqlError(SqlState.SYNTAX_ERROR, 'an index needs distinct columns');
  const name = stmt.idxname || `${tableName}_${columns.join('_')}_${stmt.unique ? 'key' : 'idx'}`;
  const owner = await indexOwner(name, deps.catalog);
  if (owner || (await deps.catalog.get(name))) {
    if (stmt.if_not_exists) return { notice: `relation "${name}" already exists, skipping` };
    throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${name}" already exists`);
  }
  const ix: SqlIndexDef = { name, columns, unique: stmt.unique === true, storage: indexTableName(name) };
  const rest = pkRest(def, ix);
  const colType = (c: string): (typeof TYPES)[keyof typeof TYPES]['storage'] => TYPES[def.columns.find((x) => x.name === c)!.type].storage;
  await deps.client.createTable({
    name: ix.storage,
    columns: [...columns, ...rest].map((c) => ({ name: c, type: colType(c), nullable: true })),
    primaryKey: { hash: [], range: ix.unique ? columns : [...columns, ...rest] },
    ifNotExists: true,
  });
  // Online: writers learn of the index step by step, then the rows already there are backfilled.
  await buildIndexOnline(def, ix, deps);
  return {};
}
