/**
 * A small pg_catalog / information_schema over tessera's catalog: the relations and functions psql
 * (\dt, \d NAME, \l) and drivers read, built from the SQL catalog's table definitions when a statement
 * names them, and queried by the executor like any table. Only the columns those clients read exist.
 */
import { tableOid, type SqlCatalog, type SqlColumnDef, type SqlIndexDef, type SqlTableDef } from './catalog';
import { parseArrayText } from './expr';
import { registerFunction } from './functions';
import { indexBuilds } from './index-build';
import type { EvalContext, ScopeColumn, Tuple } from './scope';
import { TYPES, typeByOid, textOf, type SqlTypeName, type SqlValue } from './sql-types';
import type { LoadedRelation } from './select';

export const PUBLIC_NAMESPACE_OID = 2200n;
export const PG_CATALOG_NAMESPACE_OID = 11n;
export const INFORMATION_SCHEMA_OID = 13000n;
export const DATABASE_OID = 16384n;
export const BOOTSTRAP_USER_OID = 10n;
const HEAP_AM_OID = 2n;
const LSM_AM_OID = 9900n;

type ColSpec = [string, SqlTypeName];

interface VirtualTable {
  columns: ColSpec[];
  rows: (defs: SqlTableDef[], ctx: EvalContext) => SqlValue[][];
}

const n = (v: number | bigint): bigint => BigInt(v);
/** The definitions the last catalog relation was built from (pg_get_indexdef reads them: it has no catalog access of its own). */
let lastDefs: SqlTableDef[] = [];
const indexOid = (d: SqlTableDef): bigint => n(d.oid) + 1n;
/** A CHECK constraint's OID: after the table's, its primary key index's and that key constraint's. */
const checkOid = (d: SqlTableDef, i: number): bigint => n(d.oid) + 3n + BigInt(i);
/** A secondary index's OID: its storage table's name hashed as a table's is. */
const secondaryOid = (ix: SqlIndexDef): bigint => n(tableOid(ix.storage));

/** PostgreSQL's pg_default tablespace. */
const DEFAULT_TABLESPACE_OID = 1663n;

const TABLES: Record<string, VirtualTable> = {
  pg_namespace: {
    columns: [['oid', 'oid'], ['nspname', 'name'], ['nspowner', 'oid'], ['nspacl', 'text']],
    rows: () => [[PG_CATALOG_NAMESPACE_OID, 'pg_catalog', BOOTSTRAP_USER_OID, null], [PUBLIC_NAMESPACE_OID, 'public', BOOTSTRAP_USER_OID, null], [INFORMATION_SCHEMA_OID, 'information_schema', BOOTSTRAP_USER_OID, null]],
  },
  pg_am: {
    columns: [['oid', 'oid'], ['amname', 'name'], ['amtype', 'char']],
    rows: () => [[HEAP_AM_OID, 'heap', 't'], [LSM_AM_OID, 'lsm', 'i']],
  },
  pg_class: {
    columns: [
      ['oid', 'oid'], ['relname', 'name'], ['relnamespace', 'oid'], ['reltype', 'oid'], ['reloftype', 'oid'], ['relowner', 'oid'], ['relam', 'oid'],
      ['reltablespace', 'oid'], ['reltuples', 'float4'], ['relhasindex', 'bool'], ['relpersistence', 'char'], ['relkind', 'char'], ['relnatts', 'int2'],
      ['relchecks', 'int2'], ['relhasrules', 'bool'], ['relhastriggers', 'bool'], ['relrowsecurity', 'bool'], ['relforcerowsecurity', 'bool'],
      ['relispartition', 'bool'], ['relreplident', 'char'], ['reloptions', 'text'], ['relacl', 'text'], ['relpartbound', 'text'], ['relhasoids', 'bool'], ['relpages', 'int4'], ['relallvisible', 'int4'], ['reltoastrelid', 'oid'], ['relhassubclass', 'bool'], ['relisshared', 'bool'],
    ],
    rows: (defs) => defs.flatMap((d) => {
      const visible = d.columns.filter((c) => !c.hidden).length;
      const table: SqlValue[] = [n(d.oid), d.name, PUBLIC_NAMESPACE_OID, 0n, 0n, BOOTSTRAP_USER_OID, d.viewSql !== undefined ? 0n : HEAP_AM_OID, 0n, -1, d.hasPrimaryKey || (d.indexes?.length ?? 0) > 0, 'p', d.viewSql !== undefined ? 'v' : 'r', n(visible), n(d.checks?.length ?? 0), false, false, false, false, false, 'd', null, null, null, false, 0n, 0n, 0n, false, false];
      const index = (oid: bigint, name: string, cols: number): SqlValue[] => [oid, name, PUBLIC_NAMESPACE_OID, 0n, 0n, BOOTSTRAP_USER_OID, LSM_AM_OID, 0n, -1, false, 'p', 'i', n(cols), 0n, false, false, false, false, false, 'n', null, null, null, false, 0n, 0n, 0n, false, false];
      const secondary = (d.indexes ?? []).map((ix) => index(secondaryOid(ix), ix.name, ix.columns.length));
      return [table, ...(d.hasPrimaryKey ? [index(indexOid(d), `${d.name}_pkey`, d.hash.length + d.range.length)] : []), ...secondary];
    }),
  },
  pg_attribute: {
    columns: [['attrelid', 'oid'], ['attname', 'name'], ['atttypid', 'oid'], ['attnum', 'int2'], ['atttypmod', 'int4'], ['attnotnull', 'bool'], ['atthasdef', 'bool'], ['attisdropped', 'bool'], ['attidentity', 'char'], ['attgenerated', 'char'], ['attcollation', 'oid'], ['attlen', 'int2'], ['attstorage', 'char'], ['attcompression', 'char'], ['attstattarget', 'int4'], ['attfdwoptions', 'text'], ['attndims', 'int4'], ['attislocal', 'bool'], ['attinhcount', 'int4']],
    rows: (defs) => defs.flatMap((d) => {
      const cols = d.columns.filter((c) => !c.hidden).map((c, i): SqlValue[] => [n(d.oid), c.name, n(TYPES[c.type].oid), n(i + 1), n(c.scale !== undefined ? c.typmod * 65536 + c.scale + 4 : c.typmod >= 0 ? c.typmod + 4 : -1), c.notNull, c.defaultSql !== undefined, false, '', '', isText(c.type) ? 100n : 0n, n(TYPES[c.type].size), 'p', '', -1n, null, 0n, true, 0n]);
      const keyCols = [...d.hash, ...d.range].map((k, i): SqlValue[] => {
        const c = d.columns.find((x) => x.name === k)!;
        return [indexOid(d), k, n(TYPES[c.type].oid), n(i + 1), -1n, false, false, false, '', '', 0n, n(TYPES[c.type].size), 'p', '', -1n, null, 0n, true, 0n];
      });
      const ixCols = (d.indexes ?? []).flatMap((ix) => ix.columns.map((k, i): SqlValue[] => {
        const c = d.columns.find((x) => x.name === k)!;
        return [secondaryOid(ix), k, n(TYPES[c.type].oid), n(i + 1), -1n, false, false, false, '', '', 0n, n(TYPES[c.type].size), 'p', '', -1n, null, 0n, true, 0n];
      }));
      return [...cols, ...(d.hasPrimaryKey ? keyCols : []), ...ixCols];
    }),
  },
  pg_attrdef: {
    columns: [['oid', 'oid'], ['adrelid', 'oid'], ['adnum', 'int2'], ['adbin', 'text']],
    rows: (defs) => defs.flatMap((d) => d.columns.filter((c) => !c.hidden).flatMap((c, i) => (c.defaultSql !== undefined ? [[n(d.oid * 100 + i), n(d.oid), n(i + 1), c.defaultSql]] : []))),
  },
  pg_type: {
    columns: [['oid', 'oid'], ['typname', 'name'], ['typnamespace', 'oid'], ['typlen', 'int2'], ['typtype', 'char'], ['typnotnull', 'bool'], ['typbasetype', 'oid'], ['typelem', 'oid'], ['typrelid', 'oid'], ['typcollation', 'oid'], ['typarray', 'oid']],
    rows: () => Object.entries(TYPES).filter(([k]) => k !== 'unknown').map(([k, t]) => [n(t.oid), k, PG_CATALOG_NAMESPACE_OID, n(t.size), 'b', false, 0n, 0n, 0n, isText(k as SqlTypeName) ? 100n : 0n, 0n]),
  },
  // No roles are members of others, and no functions are defined by users (\du, \df list none).
  pg_auth_members: { columns: [['roleid', 'oid'], ['member', 'oid'], ['grantor', 'oid'], ['admin_option', 'bool']], rows: () => [] },
  pg_proc: { columns: [['oid', 'oid'], ['proname', 'name'], ['pronamespace', 'oid'], ['proowner', 'oid'], ['prokind', 'char'], ['prorettype', 'oid'], ['proargtypes', 'text'], ['proretset', 'bool']], rows: () => [] },
  pg_database: {
    columns: [['oid', 'oid'], ['datname', 'name'], ['datdba', 'oid'], ['encoding', 'int4'], ['datcollate', 'text'], ['datctype', 'text'], ['datacl', 'text'], ['datistemplate', 'bool'], ['datallowconn', 'bool'], ['datlocprovider', 'char'], ['daticulocale', 'text'], ['daticurules', 'text'], ['datconnlimit', 'int4'], ['dattablespace', 'oid']],
    rows: () => ['yugabyte', 'postgres'].map((name, i) => [DATABASE_OID + n(i), name, BOOTSTRAP_USER_OID, 6n, 'C.UTF-8', 'C.UTF-8', null, false, true, 'c', null, null, -1n, DEFAULT_TABLESPACE_OID]),
  },
  pg_tablespace: {
    columns: [['oid', 'oid'], ['spcname', 'name'], ['spcowner', 'oid'], ['spcacl', 'text'], ['spcoptions', 'text']],
    rows: () => [[DEFAULT_TABLESPACE_OID, 'pg_default', BOOTSTRAP_USER_OID, null, null]],
  },
  pg_index: {
    columns: [['indexrelid', 'oid'], ['indrelid', 'oid'], ['indnatts', 'int2'], ['indisunique', 'bool'], ['indisprimary', 'bool'], ['indisclustered', 'bool'], ['indisvalid', 'bool'], ['indisreplident', 'bool'], ['indimmediate', 'bool'], ['indnullsnotdistinct', 'bool'], ['indisexclusion', 'bool'], ['indkey', 'text'], ['indexprs', 'text'], ['indpred', 'text']],
    rows: (defs) => defs.flatMap((d) => {
      const attnums = (cols: string[]): string => cols.map((k) => d.columns.filter((c) => !c.hidden).findIndex((c) => c.name === k) + 1).join(' ');
      const pkey: SqlValue[][] = d.hasPrimaryKey ? [[indexOid(d), n(d.oid), n(d.hash.length + d.range.length), true, true, false, true, false, true, false, false, attnums([...d.hash, ...d.range]), null, null]] : [];
      // indisvalid: an index still being built (indexes.ts) is not yet used by queries, as in PostgreSQL.
      return [...pkey, ...(d.indexes ?? []).map((ix): SqlValue[] => [secondaryOid(ix), n(d.oid), n(ix.columns.length), ix.unique, false, false, (ix.state ?? 'ready') === 'ready', false, true, false, false, attnums(ix.columns), null, null])];
    }),
  },
  pg_constraint: {
    columns: [['oid', 'oid'], ['conname', 'name'], ['connamespace', 'oid'], ['contype', 'char'], ['conrelid', 'oid'], ['conindid', 'oid'], ['confrelid', 'oid'], ['condeferrable', 'bool'], ['condeferred', 'bool'], ['convalidated', 'bool'], ['conislocal', 'bool'], ['conparentid', 'oid'], ['conkey', 'text']],
    rows: (defs) => [
      ...defs.filter((d) => d.hasPrimaryKey).map((d) => [indexOid(d) + 1n, `${d.name}_pkey`, PUBLIC_NAMESPACE_OID, 'p', n(d.oid), indexOid(d), 0n, false, false, true, true, 0n, null]),
      ...defs.flatMap((d) => (d.checks ?? []).map((c, i) => [checkOid(d, i), c.name, PUBLIC_NAMESPACE_OID, 'c', n(d.oid), 0n, 0n, false, false, true, true, 0n, null])),
    ] as SqlValue[][],
  },
  pg_roles: {
    columns: [['oid', 'oid'], ['rolname', 'name'], ['rolsuper', 'bool'], ['rolinherit', 'bool'], ['rolcreaterole', 'bool'], ['rolcreatedb', 'bool'], ['rolcanlogin', 'bool'], ['rolreplication', 'bool'], ['rolconnlimit', 'int4'], ['rolvaliduntil', 'timestamptz'], ['rolbypassrls', 'bool'], ['rolconfig', 'text']],
    rows: () => [[BOOTSTRAP_USER_OID, 'yugabyte', true, true, true, true, true, true, -1n, null, true, null], [BOOTSTRAP_USER_OID + 1n, 'postgres', true, true, true, true, true, true, -1n, null, true, null]],
  },
  pg_extension: {
    columns: [['oid', 'oid'], ['extname', 'name'], ['extversion', 'text'], ['extnamespace', 'oid']],
    rows: (_d, ctx) => [['plpgsql', '1.0'], ...[...ctx.session.extensions].map((e) => [e, '1.0'])].map(([e, v], i) => [n(13500 + i), e!, v!, PUBLIC_NAMESPACE_OID]),
  },
  pg_settings: {
    columns: [['name', 'text'], ['setting', 'text']],
    rows: (_d, ctx) => [...ctx.session.settings.entries()].map(([k, v]) => [k, v]),
  },
  pg_collation: { columns: [['oid', 'oid'], ['collname', 'name'], ['collnamespace', 'oid']], rows: () => [[100n, 'default', PG_CATALOG_NAMESPACE_OID]] },
  pg_description: { columns: [['objoid', 'oid'], ['classoid', 'oid'], ['objsubid', 'int4'], ['description', 'text']], rows: () => [] },
  pg_inherits: { columns: [['inhrelid', 'oid'], ['inhparent', 'oid'], ['inhseqno', 'int4'], ['inhdetachpending', 'bool']], rows: () => [] },
  pg_partitioned_table: { columns: [['partrelid', 'oid'], ['partstrat', 'char']], rows: () => [] },
  pg_trigger: { columns: [['oid', 'oid'], ['tgrelid', 'oid'], ['tgname', 'name'], ['tgisinternal', 'bool'], ['tgenabled', 'char'], ['tgparentid', 'oid']], rows: () => [] },
  pg_policy: { columns: [['oid', 'oid'], ['polname', 'name'], ['polrelid', 'oid'], ['polpermissive', 'bool'], ['polroles', 'text'], ['polqual', 'text'], ['polwithcheck', 'text'], ['polcmd', 'char']], rows: () => [] },
  pg_statistic_ext: { columns: [['oid', 'oid'], ['stxrelid', 'oid'], ['stxname', 'name'], ['stxnamespace', 'oid'], ['stxkind', 'text'], ['stxkeys', 'text'], ['stxstattarget', 'int4']], rows: () => [] },
  pg_publication: { columns: [['oid', 'oid'], ['pubname', 'name'], ['puballtables', 'bool']], rows: () => [] },
  pg_publication_rel: { columns: [['oid', 'oid'], ['prpubid', 'oid'], ['prrelid', 'oid'], ['prqual', 'text'], ['prattrs', 'text']], rows: () => [] },
  pg_publication_namespace: { columns: [['oid', 'oid'], ['pnpubid', 'oid'], ['pnnspid', 'oid']], rows: () => [] },
  pg_rewrite: { columns: [['oid', 'oid'], ['rulename', 'name'], ['ev_class', 'oid']], rows: () => [] },
  pg_foreign_table: { columns: [['ftrelid', 'oid'], ['ftserver', 'oid'], ['ftoptions', 'text']], rows: () => [] },
  pg_sequence: { columns: [['seqrelid', 'oid'], ['seqtypid', 'oid'], ['seqstart', 'int8'], ['seqincrement', 'int8'], ['seqmax', 'int8'], ['seqmin', 'int8'], ['seqcache', 'int8'], ['seqcycle', 'bool']], rows: () => [] },
  pg_stat_progress_create_index: {
    columns: [['pid', 'int4'], ['datname', 'name'], ['relid', 'oid'], ['index_relid', 'oid'], ['command', 'text'], ['phase', 'text'], ['tuples_total', 'int8'], ['tuples_done', 'int8']],
    // Builds running on this server (index-build.ts): rows found so far by the backfill's scan, and indexed.
    rows: (_d, ctx) => [...indexBuilds.values()].map((b) => [0n, ctx.session.database, n(b.table.oid), secondaryOid(b.index), b.index.unique ? 'CREATE UNIQUE INDEX' : 'CREATE INDEX', b.phase, n(b.rowsSeen), n(b.rowsDone)]),
  },
  'information_schema.tables': {
    columns: [['table_catalog', 'name'], ['table_schema', 'name'], ['table_name', 'name'], ['table_type', 'text']],
    rows: (defs, ctx) => defs.map((d) => [ctx.session.database, 'public', d.name, 'BASE TABLE']),
  },
  'information_schema.columns': {
    columns: [['table_catalog', 'name'], ['table_schema', 'name'], ['table_name', 'name'], ['column_name', 'name'], ['ordinal_position', 'int4'], ['column_default', 'text'], ['is_nullable', 'text'], ['data_type', 'text'], ['character_maximum_length', 'int4'], ['numeric_precision', 'int4'], ['numeric_scale', 'int4']],
    rows: (defs, ctx) => defs.flatMap((d) => d.columns.filter((c) => !c.hidden).map((c, i) => [ctx.session.database, 'public', d.name, c.name, n(i + 1), c.defaultSql ?? null, c.notNull ? 'NO' : 'YES', TYPES[c.type].display, c.typmod >= 0 && c.type !== 'numeric' ? n(c.typmod) : null, ...numericPrecision(c)])),
  },
};

function isText(t: SqlTypeName): boolean {
  return t === 'text' || t === 'varchar' || t === 'bpchar' || t === 'name';
}

function key(schema: string | undefined, name: string): string | undefined {
  if (schema === 'information_schema') return `information_schema.${name}`;
  if (schema !== undefined && schema !== 'pg_catalog') return undefined;
  return name in TABLES ? name : undefined;
}

export function isVirtualRelation(schema: string | undefined, name: string): boolean {
  const k = key(schema, name);
  return k !== undefined && k in TABLES;
}

export async function virtualRelation(schema: string | undefined, name: string, catalog: SqlCatalog, ctx: EvalContext): Promise<LoadedRelation> {
  const t = TABLES[key(schema, name)!]!;
  const defs = await catalog.list();
  lastDefs = defs;
  const columns: ScopeColumn[] = t.columns.map(([c, type]) => ({ rel: name, name: c, type }));
  const rows: Tuple[] = t.rows(defs, ctx);
  return { columns, rows };
}

// pg_catalog functions psql and drivers call.
registerFunction('pg_table_is_visible', () => true);
registerFunction('pg_type_is_visible', () => true);
registerFunction('pg_get_userbyid', (a) => (a[0] === BOOTSTRAP_USER_OID ? 'yugabyte' : 'postgres'));
registerFunction('pg_encoding_to_char', () => 'UTF8');
registerFunction('obj_description', () => null);
registerFunction('col_description', () => null);
registerFunction('shobj_description', () => null);
registerFunction('pg_get_expr', (a) => (a[0] === null ? null : textOf(a[0])));
registerFunction('pg_is_in_recovery', () => false);
registerFunction('has_table_privilege', () => true);
registerFunction('has_schema_privilege', () => true);
registerFunction('has_database_privilege', () => true);
registerFunction('pg_get_indexdef', (a) => {
  for (const t of lastDefs) {
    const ix = (t.indexes ?? []).find((x) => secondaryOid(x) === a[0]);
    // Range-partitioned on its columns (indexes.ts): every column ascending.
    if (ix) return `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${ix.name} ON public.${t.name} USING lsm (${ix.columns.map((c) => `${c} ASC`).join(', ')})`;
  }
  const d = lastDefs.find((x) => indexOid(x) === a[0]);
  if (!d) return null;
  const cols = [...(d.hash.length > 0 ? [`${d.hash.length > 1 ? `(${d.hash.join(', ')})` : d.hash[0]} HASH`] : []), ...d.range.map((r) => `${r} ASC`)];
  return `CREATE UNIQUE INDEX ${d.name}_pkey ON public.${d.name} USING lsm (${cols.join(', ')})`;
});
registerFunction('pg_get_constraintdef', (a) => {
  if (a[0] === null || !/^\d+$/.test(textOf(a[0]!))) return null;
  const oid = BigInt(textOf(a[0]!));
  for (const d of lastDefs) {
    const i = (d.checks ?? []).findIndex((_, k) => checkOid(d, k) === oid);
    if (i >= 0) return `CHECK (${d.checks![i]!.sql})`;
    if (d.hasPrimaryKey && indexOid(d) + 1n === oid) return `PRIMARY KEY (${[...d.hash, ...d.range].join(', ')})`;
  }
  return null;
});
// array_to_string(arr, sep [, null_text]): NULL elements skipped unless null_text is given.
registerFunction('array_to_string', (a) => (a[0] === null || a[1] === null ? null : parseArrayText(textOf(a[0]!)).flatMap((v) => (v === null ? (a[2] === undefined || a[2] === null ? [] : [textOf(a[2])]) : [textOf(v)])).join(textOf(a[1]!))));
registerFunction('pg_size_pretty', (a) => `${textOf(a[0]!)} bytes`);
registerFunction('format_type', (a) => {
  if (a[0] === null) return null;
  const t = typeByOid(Number(a[0]));
  if (!t) return '???';
  const mod = a[1] === null || a[1] === undefined ? -1 : Number(a[1]);
  const base = TYPES[t].display;
  if (mod > 4 && t === 'numeric') return `${base}(${(mod - 4) >> 16},${(mod - 4) & 0xffff})`;
  return mod > 4 && (t === 'varchar' || t === 'bpchar') ? `${base}(${mod - 4})` : base;
});
registerFunction('pg_relation_is_publishable', () => false);
registerFunction('pg_type_is_visible', () => true);
registerFunction('pg_function_is_visible', () => true);
// \d+ and \dt+ ask for sizes: the SQL layer does not know a relation's bytes (its tablets' SST files
// are on the tservers; the web console shows them), so these answer NULL — unknown — rather than fail.
for (const f of ['pg_table_size', 'pg_relation_size', 'pg_total_relation_size', 'pg_indexes_size', 'pg_database_size', 'pg_tablespace_size']) registerFunction(f, () => null);
registerFunction('array_upper', (a) => BigInt(parseArrayLength(a[0]!)));
registerFunction('array_length', (a) => BigInt(parseArrayLength(a[0]!)));
registerFunction('pg_get_statisticsobjdef_columns', () => null);
registerFunction('pg_get_partkeydef', () => null);
registerFunction('pg_get_viewdef', (a) => lastDefs.find((d) => a[0] !== null && BigInt(d.oid) === BigInt(textOf(a[0]!)) && d.viewSql !== undefined)?.viewSql ?? null);
registerFunction('pg_get_triggerdef', () => null);
registerFunction('pg_tablespace_location', () => '');

function parseArrayLength(v: SqlValue): number {
  const t = textOf(v).replace(/^\{|\}$/g, '');
  return t === '' ? 0 : t.split(',').length;
}

/** information_schema's numeric_precision and numeric_scale of a column (binary digits for integers and floats). */
function numericPrecision(c: SqlColumnDef): SqlValue[] {
  const bits: Partial<Record<string, number>> = { int2: 16, int4: 32, int8: 64, float4: 24, float8: 53 };
  if (bits[c.type] !== undefined) return [n(bits[c.type]!), c.type.startsWith('float') ? null : 0n];
  if (c.type === 'numeric' && c.scale !== undefined) return [n(c.typmod), n(c.scale)];
  return [null, null];
}
