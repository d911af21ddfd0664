/**
 * The SQL layer's catalog: what a SQL table is beyond tessera's table (SQL types, NOT NULL, DEFAULT
 * expressions, the sequence behind a serial column, a hidden row id). It is kept in a tessera table of
 * its own, `sql_catalog` (name -> JSON definition), written when DDL runs; tessera's master catalog
 * keeps the storage schema as always. Tables created through the client library (no SQL definition)
 * are shown with the SQL types of their column types. Sequences live in `sql_sequences`.
 *
 * Each server caches definitions for CATALOG_CACHE_TTL_MS: DDL through another server is seen here
 * after at most that long (YugabyteDB's catalog version check is finer; tessera keeps it simple).
 */
import type { ColumnType, TesseraClient } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import { TRANSACTIONS_TABLE } from '../../common/system-tables';
import { SqlError, SqlState } from './sql-error';
import type { SqlTypeName } from './sql-types';

export const CATALOG_TABLE = 'sql_catalog';
export const SEQUENCES_TABLE = 'sql_sequences';
export const CATALOG_CACHE_TTL_MS = 2_000;
/** Index storage tables (indexes.ts) carry this prefix; they are not SQL tables of their own. */
export const INDEX_TABLE_PREFIX = 'sql_index__';
/** Views are rows of the SQL catalog under this prefix (views.ts). */
export const VIEW_PREFIX = 'view:';

/** A view: its query's parse tree (JSON) and text, and the column names CREATE VIEW gave. */
export interface SqlViewDef {
  name: string;
  ast: string;
  sql: string;
  columns?: string[];
  /** The columns' types (for \d), as planned at CREATE VIEW. */
  types?: SqlTypeName[];
}

/** The hidden key column of a table created without PRIMARY KEY (YugabyteDB's ybrowid). */
export const ROW_ID_COLUMN = 'ybrowid';

export interface SqlColumnDef {
  name: string;
  type: SqlTypeName;
  /** varchar(n) / char(n) length, numeric(p, s) precision; -1 when none. */
  typmod: number;
  /** numeric(p, s)'s scale: values are rounded to it and must fit p digits (dml.ts checkRow). */
  scale?: number;
  notNull: boolean;
  /** The DEFAULT expression's SQL text. */
  defaultSql?: string;
  /** The DEFAULT expression's parse tree (JSON), evaluated for rows that do not give the column. */
  defaultAst?: string;
  /** The sequence a serial column draws from. */
  sequence?: string;
  hidden?: boolean;
}

/** A secondary index (indexes.ts): its columns, and the tessera table that holds its entries. */
export interface SqlIndexDef {
  name: string;
  columns: string[];
  unique: boolean;
  storage: string;
  /**
   * YugabyteDB's index permissions while CREATE INDEX builds it online (index-build.ts): writers
   * only delete entries, then maintain them fully, then the backfill runs; absent or 'ready':
   * queries may read it.
   */
  state?: IndexState;
}

export type IndexState = 'delete_only' | 'write_and_delete' | 'backfilling' | 'ready';

export interface SqlTableDef {
  name: string;
  oid: number;
  columns: SqlColumnDef[];
  hash: string[];
  range: string[];
  /** False for tables the client library created (their definition is derived, not stored). */
  stored: boolean;
  /** The name of the primary key constraint (pkey), none for a hidden row id. */
  hasPrimaryKey: boolean;
  /** Secondary indexes, maintained by every write of the table (indexes.ts). */
  indexes?: SqlIndexDef[];
  /** CHECK constraints: each row written must not make one false (dml.ts checkRow). */
  checks?: SqlCheckDef[];
  /** A view's query text (views.ts): list() gives views beside tables, for pg_class (relkind 'v') and \d. */
  viewSql?: string;
}

/** A CHECK constraint: PostgreSQL's name for it, its SQL text and parse tree (JSON). */
export interface SqlCheckDef {
  name: string;
  sql: string;
  ast: string;
}

const FROM_COLUMN_TYPE: Record<ColumnType, SqlTypeName> = { int64: 'int8', double: 'float8', string: 'text', bytes: 'bytea', bool: 'bool' };

/** A stable OID per table name (PostgreSQL gives user objects OIDs from 16384). */
export function tableOid(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
  return 16384 + (h % 1_000_000_000);
}

export const HIDDEN_TABLES = new Set([CATALOG_TABLE, SEQUENCES_TABLE, TRANSACTIONS_TABLE]);

export class SqlCatalog {
  private readonly cache = new Map<string, { def: SqlTableDef | undefined; atMs: number }>();
  private readonly viewCache = new Map<string, { def: SqlViewDef | undefined; atMs: number }>();
  private listCache: { defs: SqlTableDef[]; atMs: number } | undefined;
  private ready: Promise<void> | undefined;

  constructor(private readonly client: TesseraClient) {}

  /** Create the catalog tables once (every server may try; IF NOT EXISTS makes that safe). */
  ensureTables(): Promise<void> {
    this.ready ??= (async () => {
      await this.client.createTable({ name: CATALOG_TABLE, columns: [{ name: 'name', type: 'string' }, { name: 'def', type: 'string' }], primaryKey: { hash: ['name'] }, numTablets: 1, ifNotExists: true });
      await this.client.createTable({ name: SEQUENCES_TABLE, columns: [{ name: 'name', type: 'string' }, { name: 'last', type: 'int64' }], primaryKey: { hash: ['name'] }, numTablets: 1, ifNotExists: true });
    })().catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  invalidate(name?: string): void {
    if (name === undefined) { this.cache.clear(); this.viewCache.clear(); }
    else { this.cache.delete(name); this.viewCache.delete(name); }
    this.listCache = undefined;
    this.generation++;
  }

  /** Bumped by every invalidation: a read that began before one may hold the old definition. */
  private generation = 0;

  /** The current generation (a description computed under another one may be stale). */
  get currentGeneration(): number {
    return this.generation;
  }

  async get(name: string): Promise<SqlTableDef | undefined> {
    const c = this.cache.get(name);
    if (c && performance.now() - c.atMs < CATALOG_CACHE_TTL_MS) return c.def;
    // Aged from when the read began, and not kept when DDL here changed the catalog meanwhile: the
    // online index build (index-build.ts) counts on no definition outliving its store by more than the TTL.
    const atMs = performance.now();
    const gen = this.generation;
    const def = await this.load(name);
    if (this.cache.size > 10_000) this.cache.clear();
    if (gen === this.generation) this.cache.set(name, { def, atMs });
    return def;
  }

  async require(name: string, location?: number): Promise<SqlTableDef> {
    const d = await this.get(name);
    if (!d) throw new SqlError(SqlState.UNDEFINED_TABLE, `relation "${name}" does not exist`, location !== undefined ? { position: location + 1 } : {});
    return d;
  }

  private async load(name: string): Promise<SqlTableDef | undefined> {
    if (HIDDEN_TABLES.has(name) || name.startsWith(INDEX_TABLE_PREFIX)) return undefined;
    await this.ensureTables();
    const row = await this.client.table(CATALOG_TABLE).get({ name });
    if (row && typeof row['def'] === 'string') return JSON.parse(row['def']) as SqlTableDef;
    try {
      const loc = await this.client.tableLocations(name);
      return derivedDef(name, loc.schema.columns, loc.schema.hash.map((c) => c.name), loc.schema.range.map((c) => c.name));
    } catch (e) {
      if (e instanceof DbError && e.code === ErrorCode.TABLE_NOT_FOUND) return undefined;
      throw e;
    }
  }

  async list(): Promise<SqlTableDef[]> {
    if (this.listCache && performance.now() - this.listCache.atMs < CATALOG_CACHE_TTL_MS) return this.listCache.defs;
    const atMs = performance.now();
    const gen = this.generation;
    await this.ensureTables();
    const tables = await this.client.listTables();
    const stored = new Map<string, SqlTableDef>();
    const defs: SqlTableDef[] = [];
    for (const r of await this.client.table(CATALOG_TABLE).scan()) {
      const name = String(r['name']);
      if (name.startsWith(VIEW_PREFIX)) defs.push(viewAsDef(JSON.parse(String(r['def'])) as SqlViewDef));
      else if (!name.startsWith('extension:')) stored.set(name, JSON.parse(String(r['def'])) as SqlTableDef);
    }
    for (const t of tables) {
      if (HIDDEN_TABLES.has(t.name) || t.name.startsWith(INDEX_TABLE_PREFIX)) continue;
      const d = stored.get(t.name) ?? (await this.get(t.name));
      if (d) defs.push(d);
    }
    defs.sort((a, b) => a.name.localeCompare(b.name));
    if (gen === this.generation) this.listCache = { defs, atMs };
    return defs;
  }

  /** A view's definition (views.ts), cached as table definitions are; undefined when there is none. */
  async getView(name: string): Promise<SqlViewDef | undefined> {
    const c = this.viewCache.get(name);
    if (c && performance.now() - c.atMs < CATALOG_CACHE_TTL_MS) return c.def;
    const atMs = performance.now();
    const gen = this.generation;
    await this.ensureTables();
    const row = await this.client.table(CATALOG_TABLE).get({ name: VIEW_PREFIX + name });
    const def = row && typeof row['def'] === 'string' ? (JSON.parse(row['def']) as SqlViewDef) : undefined;
    if (this.viewCache.size > 10_000) this.viewCache.clear();
    if (gen === this.generation) this.viewCache.set(name, { def, atMs });
    return def;
  }

  async storeView(def: SqlViewDef): Promise<void> {
    await this.ensureTables();
    await this.client.table(CATALOG_TABLE).upsert({ name: VIEW_PREFIX + def.name, def: JSON.stringify(def) });
    this.invalidate(def.name);
  }

  async removeView(name: string): Promise<void> {
    await this.ensureTables();
    await this.client.table(CATALOG_TABLE).delete({ name: VIEW_PREFIX + name });
    this.invalidate(name);
  }

  async store(def: SqlTableDef): Promise<void> {
    await this.ensureTables();
    await this.client.table(CATALOG_TABLE).upsert({ name: def.name, def: JSON.stringify(def) });
    this.invalidate(def.name);
  }

  async remove(name: string): Promise<void> {
    await this.ensureTables();
    await this.client.table(CATALOG_TABLE).delete({ name });
    this.invalidate(name);
  }
}

/** A view as list() gives it: its columns, no key, its text. */
function viewAsDef(v: SqlViewDef): SqlTableDef {
  const columns = (v.columns ?? []).map((c, i): SqlColumnDef => ({ name: c, type: v.types?.[i] ?? 'text', typmod: -1, notNull: false }));
  return { name: v.name, oid: tableOid(v.name), columns, hash: [], range: [], stored: true, hasPrimaryKey: false, viewSql: v.sql };
}

function derivedDef(name: string, cols: Array<{ name: string; type: ColumnType; nullable: boolean }>, hash: string[], range: string[]): SqlTableDef {
  return {
    name,
    oid: tableOid(name),
    columns: cols.map((c) => ({ name: c.name, type: FROM_COLUMN_TYPE[c.type], typmod: -1, notNull: !c.nullable || hash.includes(c.name) || range.includes(c.name) })),
    hash,
    range,
    stored: false,
    hasPrimaryKey: true,
  };
}
