/**
 * Data commands for people at a terminal: create-table, drop-table, list-tables, insert, upsert,
 * update, delete, get, scan. Values are written col=value and converted by the column's type
 * (int64 decimal, double, string as is, bool true/false, bytes as 0x-hex).
 */
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { familyAttributes, parseFamilySpec, type ColumnFamily } from '../common/column-families';
import { hexOf } from '../common/key-bounds';
import type { ColumnSpec, ColumnType, Row, TableDurability } from '../client/client-types';
import type { TableSchema } from '../client/table-schema';
import type { TesseraClient } from '../client/tessera-client';
import { getCells, printCells, wantsCells, type CellGetFlags } from './cell-get';
import { CELL_CHARS_SHOWN, CERTS_DIR_HELP, CLUSTER_SECRET_HELP, DEFAULT_MASTER_ADDRESSES, LAB_DIR_HELP, print, printJson, printTable, withClient } from './cli-io';

const TYPES: readonly string[] = ['int64', 'double', 'string', 'bytes', 'bool'];

export function parseColumns(spec: string): ColumnSpec[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const [name, type, family, extra] = s.split(':');
      if (!name || !type || family === '' || extra !== undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `column '${s}' must look like name:type or name:type:family`);
      if (!TYPES.includes(type)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `column ${name} has unknown type '${type}' (one of ${TYPES.join(', ')})`);
      return family ? { name, type: type as ColumnType, family } : { name, type: type as ColumnType };
    });
}

export function parseValue(schema: TableSchema, name: string, text: string): Row[string] {
  const c = schema.byName.get(name);
  if (!c) throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${schema.name} has no column ${name}`);
  if (text === 'null') return null;
  const bad = (): DbError => new DbError(ErrorCode.INVALID_ARGUMENT, `'${text}' is not a valid ${c.type} for column ${name}`);
  switch (c.type) {
    case 'int64':
      if (!/^-?\d+$/.test(text)) throw bad();
      return BigInt(text);
    case 'double': {
      const v = Number(text);
      if (text.trim() === '' || Number.isNaN(v)) throw bad();
      return v;
    }
    case 'bool':
      if (text !== 'true' && text !== 'false') throw bad();
      return text === 'true';
    case 'bytes':
      if (!/^0x([0-9a-fA-F]{2})*$/.test(text)) throw bad();
      return new Uint8Array(Buffer.from(text.slice(2), 'hex'));
    case 'string':
      return text;
  }
}

export async function parseRow(client: TesseraClient, table: string, pairs: string[]): Promise<Row> {
  const loc = await client.tableLocations(table);
  const row: Row = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `'${p}' must look like column=value`);
    row[p.slice(0, i)] = parseValue(loc.schema, p.slice(0, i), p.slice(i + 1));
  }
  return row;
}

interface RowPrintOptions {
  json?: boolean;
  /** Show long values whole instead of cut at CELL_CHARS_SHOWN. */
  full?: boolean;
  /** Only these columns, in this order. */
  columns?: string[];
}

function printRows(rows: Row[], o: RowPrintOptions): void {
  const pick = (r: Row): Row => (o.columns ? Object.fromEntries(o.columns.map((c) => [c, r[c] ?? null])) : r);
  if (o.json) return printJson({ rows: rows.map(pick) });
  if (rows.length === 0) return print('(no rows)');
  const headers = o.columns ?? Object.keys(rows[0]!);
  printTable(headers, rows.map((r) => headers.map((h) => r[h])), o.full ? undefined : CELL_CHARS_SHOWN);
}

/** --columns a,b checked against the table's schema, so a typo is an error rather than a column of nulls. */
function parseColumnList(schema: TableSchema, list: string | undefined): string[] | undefined {
  if (list === undefined) return undefined;
  const cols = list.split(',').map((c) => c.trim()).filter(Boolean);
  if (cols.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--columns needs at least one column name');
  for (const c of cols) if (!schema.byName.has(c)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${schema.name} has no column ${c} (it has ${schema.columns.map((x) => x.name).join(', ')})`);
  return cols;
}

export interface CommonOpts {
  master_addresses: string;
  lab_dir?: string;
  timeout_ms?: string;
  json?: boolean;
}

export function common(c: Command): Command {
  return c.option('--master_addresses <addrs>', 'comma-separated master RPC addresses', DEFAULT_MASTER_ADDRESSES).option('--lab_dir <dir>', LAB_DIR_HELP).option('--cluster_secret_file <path>', CLUSTER_SECRET_HELP).option('--certs_dir <dir>', CERTS_DIR_HELP).option('--timeout_ms <ms>', 'deadline of the operation').option('--json', 'machine-readable output');
}

export const timeout = (o: CommonOpts): number | undefined => (o.timeout_ms ? Number(o.timeout_ms) : undefined);

/** --durability: one of the levels, case-insensitive (the master checks it again). */
function parseDurability(s: string): TableDurability {
  const up = s.trim().toUpperCase();
  if (up === 'ASYNC' || up === 'FLUSH' || up === 'FSYNC') return up;
  throw new DbError(ErrorCode.INVALID_ARGUMENT, `--durability ${s}: one of ASYNC, FLUSH, FSYNC`);
}

/** Repeated --family options (commander collects them). */
const collectFamily = (v: string, prev: ColumnFamily[] = []): ColumnFamily[] => [...prev, parseFamilySpec(v)];
const FAMILY_HELP = "a column family and its retention, repeatable: 'cf1:VERSIONS=3,TTL=10,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true' (docs/cells.md)";

// Long by design (docs/conventions.md): a table of commands, each a few lines of options and one call; splitting it by size would only scatter the table.
export function registerDataCommands(program: Command): void {
  common(program.command('create-table <name>').description('create a table: --columns "id:int64,value:string" --hash id [--range c] [--tablets N] [--rf N]'))
    .requiredOption('--columns <list>', 'name:type[:family],... (types: int64, double, string, bytes, bool)')
    .option('--family <spec>', FAMILY_HELP, collectFamily)
    .option('--hash <cols>', 'hash primary key columns (comma list)')
    .option('--range <cols>', 'range primary key columns (comma list)')
    .option('--tablets <n>', 'number of tablets')
    .option('--rf <n>', 'replication factor')
    .option('--durability <level>', 'ASYNC | FLUSH | FSYNC (default FSYNC): how far a write gets before it is acknowledged (docs/durability.md)')
    .option('--split_at <points>', "range tables: split points, values of the first range column: 'k1,k2,...' (N points = N+1 tablets; a point of several columns: 'a/1,b/2'); docs/splitting.md")
    .option('--split_policy <policy>', 'where splits may fall: any (default) or prefix:N (rows sharing their first N range columns stay in one tablet)')
    .action(async (name: string, o: CommonOpts & { columns: string; hash?: string; range?: string; tablets?: string; rf?: string; durability?: string; split_at?: string; split_policy?: string; family?: ColumnFamily[] }) => {
      const split = (s: string | undefined): string[] => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []);
      const id = await withClient(o, timeout(o), (c) =>
        c.createTable({
          name,
          columns: parseColumns(o.columns),
          primaryKey: { hash: split(o.hash), range: split(o.range) },
          ...(o.tablets ? { numTablets: Number(o.tablets) } : {}),
          ...(o.rf ? { replicationFactor: Number(o.rf) } : {}),
          ...(o.durability ? { durability: parseDurability(o.durability) } : {}),
          ...(o.family ? { families: o.family } : {}),
          ...(o.split_at ? { splitAt: split(o.split_at).map((p) => p.split('/')) } : {}),
          ...(o.split_policy ? { splitPolicy: o.split_policy } : {}),
        }),
      );
      if (o.json) printJson({ name, id });
      else print(`created table ${name} (${id})`);
    });

  common(program.command('drop-table <name>').description('drop a table'))
    .option('--if_exists', 'no error when it does not exist')
    .action(async (name: string, o: CommonOpts & { if_exists?: boolean }) => {
      await withClient(o, timeout(o), (c) => c.dropTable(name, { ifExists: o.if_exists ?? false }));
      if (!o.json) print(`dropped table ${name}`);
      else printJson({ dropped: name });
    });

  common(program.command('list-tables').description('list tables')).action(async (o: CommonOpts) => {
    const tables = await withClient(o, timeout(o), (c) => c.listTables());
    if (o.json) printJson({ tables });
    else printTable(['name', 'id', 'tablets', 'rf', 'schema version'], tables.map((t) => [t.name, t.id, t.numTablets, t.replicationFactor, t.schemaVersion]));
  });

  common(program.command('describe-table <name>').description('a table\'s columns (name, id, type, nullable, key), schema version and tablets')).action(async (name: string, o: CommonOpts) => {
    const [loc, tables] = await withClient(o, timeout(o), (c) => Promise.all([c.tableLocations(name), c.listTables()]));
    const sc = loc.schema;
    const durability = tables.find((t) => t.id === sc.id)?.durability ?? 'FSYNC';
    const keyOf = (n: string): string => (sc.hash.some((c) => c.name === n) ? 'HASH' : sc.range.some((c) => c.name === n) ? 'RANGE' : '');
    const columns = sc.columns.map((c) => ({ name: c.name, id: c.id, type: c.type, nullable: c.nullable, key: keyOf(c.name), family: c.family }));
    const tablets = loc.tablets.map((t) => ({
      tabletId: t.tabletId,
      partition: [t.start, t.end],
      ...(t.keyStart?.length || t.keyEnd?.length ? { keyRange: [hexOf(t.keyStart), hexOf(t.keyEnd)] } : {}),
      leader: t.replicas.find((r) => r.role === 'LEADER')?.rpcAddress ?? null,
      followers: t.replicas.filter((r) => r.role !== 'LEADER').map((r) => r.rpcAddress),
    }));
    if (o.json) return printJson({ name: sc.name, id: sc.id, schemaVersion: sc.version, durability, columns, families: sc.families, tablets: loc.tablets.length, tabletLocations: tablets });
    print(`table ${sc.name} (${sc.id}): schema version ${sc.version}, durability ${durability}, ${loc.tablets.length} tablet(s)`);
    printTable(['column', 'id', 'type', 'nullable', 'key', 'family'], columns.map((c) => [c.name, c.id, c.type, c.nullable, c.key, c.family]));
    print('');
    printTable(['family', 'retention'], sc.families.map((f) => [f.name, familyAttributes(f)]));
    print('');
    printTable(['tablet', 'partition', 'leader', 'followers'], tablets.map((t) => [t.tabletId, partitionLabel(t), t.leader ?? '(none yet)', t.followers.join(' ')]));
  });

  common(program.command('alter-table <name>').description('change a table: --add_columns "c:string,d:int64" --drop_columns b --rename_columns old:new --rename_to NAME (any mix, one schema version)'))
    .option('--add_columns <list>', 'name:type[:family],... (nullable: existing rows have no value)')
    .option('--family <spec>', `${FAMILY_HELP}; adds the family or redefines it whole`, collectFamily)
    .option('--drop_columns <cols>', 'columns to drop (comma list; not primary key columns)')
    .option('--rename_columns <list>', 'old:new,... (names before this change)')
    .option('--rename_to <name>', 'a new name for the table')
    .option('--durability <level>', 'ASYNC | FLUSH | FSYNC: the table\'s new Raft log level (docs/durability.md)')
    .action(async (name: string, o: CommonOpts & { add_columns?: string; drop_columns?: string; rename_columns?: string; rename_to?: string; durability?: string; family?: ColumnFamily[] }) => {
      const split = (s: string | undefined): string[] => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : []);
      const renames = split(o.rename_columns).map((r) => {
        const [from, to, extra] = r.split(':');
        if (!from || !to || extra !== undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `rename '${r}' must look like old:new`);
        return { from, to };
      });
      let shown = -1;
      const r = await withClient(o, timeout(o), (c) =>
        c.alterTable(name, {
          addColumns: o.add_columns ? parseColumns(o.add_columns) : [],
          dropColumns: split(o.drop_columns),
          renameColumns: renames,
          ...(o.rename_to ? { renameTo: o.rename_to } : {}),
          ...(o.durability ? { durability: parseDurability(o.durability) } : {}),
          ...(o.family ? { setFamilies: o.family } : {}),
        }, {
          ...(timeout(o) ? { timeoutMs: timeout(o)! } : {}),
          onProgress: (p) => {
            if (o.json || p.tabletsDone === shown) return;
            shown = p.tabletsDone;
            process.stderr.write(`schema version ${p.schemaVersion}: on ${p.tabletsDone} of ${p.tablets} tablets\n`);
          },
        }),
      );
      if (o.json) printJson({ name: o.rename_to || name, schemaVersion: r.schemaVersion });
      else print(`altered table ${o.rename_to || name}: schema version ${r.schemaVersion}, on every tablet`);
    });

  for (const [cmd, what] of [
    ['insert', 'insert a row (fails with ALREADY_EXISTS if it exists)'],
    ['upsert', 'insert or overwrite a row'],
    ['update', 'change columns of an existing row'],
    ['delete', 'delete the row with this key'],
  ] as const) {
    common(program.command(`${cmd} <table> <values...>`).description(`${what}: col=value ...`))
      .option('--ttl_ms <ms>', 'insert, upsert, update: the row and the columns written expire this long after the write (docs/cells.md)')
      .action(async (table: string, values: string[], o: CommonOpts & { ttl_ms?: string }) => {
      const ttl = o.ttl_ms !== undefined ? { ttlMs: Number(o.ttl_ms) } : {};
      await withClient(o, timeout(o), async (c) => {
        const row = await parseRow(c, table, values);
        const t = c.table(table);
        if (cmd === 'insert') await t.insert(row, ttl);
        else if (cmd === 'upsert') await t.upsert(row, ttl);
        else if (cmd === 'update') await t.update(row, ttl);
        else await t.delete(row);
      });
      if (o.json) printJson({ ok: true });
      else print('OK');
    });
  }

  const COLUMNS_HELP = 'only these columns, in this order (comma list)';
  const FULL_HELP = `show long values whole (a table cuts them at ${CELL_CHARS_SHOWN} characters and says their length)`;
  common(program.command('get <table> <key...>').description('read the row with this key: col=value ... (with a cell flag: its cells, docs/cells.md)'))
    .option('--columns <cols>', COLUMNS_HELP)
    .option('--full', FULL_HELP)
    .option('--versions <n>', 'cells: versions per column (HBase VERSIONS)')
    .option('--as_of <time>', 'cells: a snapshot of the past (hybrid time, wall ms or ISO date)')
    .option('--time_range <a,b>', 'cells: timestamps in [a, b)')
    .option('--raw', 'cells: every version and every delete marker')
    .option('--families <list>', 'cells: only these column families')
    .action(async (table: string, key: string[], o: CommonOpts & CellGetFlags & { columns?: string; full?: boolean }) => {
      if (wantsCells(o)) {
        const r = await withClient(o, timeout(o), async (c) => getCells(c, table, await parseRow(c, table, key), o, parseColumnList((await c.tableLocations(table)).schema, o.columns)));
        return printCells(r, o.json ?? false);
      }
      const { row, columns } = await withClient(o, timeout(o), async (c) => {
        const loc = await c.tableLocations(table);
        const cols = parseColumnList(loc.schema, o.columns);
        return { row: await c.table(table).get(await parseRow(c, table, key)), columns: cols };
      });
      if (!row) throw new DbError(ErrorCode.NOT_FOUND, `no row with key ${key.join(' ')} in table ${table}`);
      printRows([row], { json: o.json ?? false, full: o.full ?? false, ...(columns ? { columns } : {}) });
    });

  common(program.command('scan <table>').description('rows of a table in key order'))
    .option('--limit <n>', 'rows at most', '100')
    .option('--columns <cols>', COLUMNS_HELP)
    .option('--full', FULL_HELP)
    .option('--filter <expr>', "a server-side filter, e.g. \"PrefixFilter('a') AND ValueFilter(=,'substring:x')\" (docs/filters.md)")
    .option('--stats', 'also print the filter counters (cells read from storage, cells skipped) to stderr')
    .action(async (table: string, o: CommonOpts & { limit: string; columns?: string; full?: boolean; filter?: string; stats?: boolean }) => {
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--limit must be a non-negative integer`);
      const stats = { cellsRead: 0, cellsSkipped: 0, calls: 0 };
      const { rows, columns } = await withClient(o, timeout(o), async (c) => {
        const cols = parseColumnList((await c.tableLocations(table)).schema, o.columns);
        return { rows: await c.table(table).scan({ limit, stats, ...(o.filter !== undefined ? { filter: o.filter } : {}) }), columns: cols };
      });
      printRows(rows, { json: o.json ?? false, full: o.full ?? false, ...(columns ? { columns } : {}) });
      if (o.stats) process.stderr.write(o.json ? `${JSON.stringify({ rows: rows.length, ...stats })}\n` : `${rows.length} rows; cells read ${stats.cellsRead}, skipped ${stats.cellsSkipped}, in ${stats.calls} scan calls\n`);
    });
}

/** A tablet's partition for people: its hash range, or its key range (hex of the encoded bounds). */
function partitionLabel(t: { partition: number[]; keyRange?: string[] }): string {
  if (t.keyRange) return `key [${t.keyRange[0] || '-inf'}, ${t.keyRange[1] || '+inf'})`;
  return `hash [${t.partition[0]}, ${t.partition[1]})`;
}
