/**
 * CreateTable checks (pure): every bad definition is refused with a clear INVALID_ARGUMENT before
 * anything is replicated. Column ids are assigned here, 1-based in declaration order.
 */
import { DbError, ErrorCode } from '../common/errors';
import { checkFamilies, checkFamily, DEFAULT_FAMILY, type ColumnFamily } from '../common/column-families';
import { COLUMN_TYPES, HASH_SPACE, isColumnType, nextColumnIdOf, type ColumnDef, type Partition, type TableInfo, type TableSchema } from './catalog-types';

/** Tablets per table (each is a Raft group on RF servers: bounded by what one lab cluster can host). */
export const TABLETS_PER_TABLE_MAX = 256;
export const COLUMNS_PER_TABLE_MAX = 1000;
export const NAME_CHARS_MAX = 128;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface CreateTableInput {
  name: string;
  columns: Array<{ name: string; type: string; nullable?: boolean; family?: string }>;
  /** Column families (docs/cells.md); columns naming none are in `default`. */
  families?: ColumnFamily[];
  hashColumns: string[];
  rangeColumns: string[];
  /** 0 = default (one tablet per live tserver, at least 1). */
  numTablets: number;
  /** 0 = default (the replication_factor flag). */
  replicationFactor: number;
  /** Range tables: split points (docs/splitting.md); N points = N+1 tablets. */
  splitKeys?: Uint8Array[];
}

export interface ValidatedTable {
  name: string;
  schema: TableSchema;
  numTablets: number;
  replicationFactor: number;
}

function invalid(msg: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg, details);
}

function checkName(kind: string, name: string): void {
  if (!name) throw invalid(`${kind} name is empty`);
  if (name.length > NAME_CHARS_MAX) throw invalid(`${kind} name '${name.slice(0, 40)}…' is longer than ${NAME_CHARS_MAX} characters`);
  if (!NAME_RE.test(name)) throw invalid(`${kind} name '${name}' is not valid: use letters, digits and _, not starting with a digit`);
}

export function validateCreateTable(input: CreateTableInput, liveTServers: number, defaultRf: number): ValidatedTable {
  checkName('table', input.name);
  if (input.columns.length === 0) throw invalid(`table ${input.name} has no columns`);
  if (input.columns.length > COLUMNS_PER_TABLE_MAX) throw invalid(`table ${input.name} has ${input.columns.length} columns; at most ${COLUMNS_PER_TABLE_MAX}`);
  const seen = new Set<string>();
  for (const c of input.columns) {
    checkName('column', c.name);
    if (seen.has(c.name)) throw invalid(`column ${c.name} is declared twice`);
    seen.add(c.name);
    if (!isColumnType(c.type)) throw invalid(`column ${c.name} has unknown type '${c.type}' (one of ${COLUMN_TYPES.join(', ')})`, { column: c.name });
  }
  const keyCols = [...input.hashColumns, ...input.rangeColumns];
  if (keyCols.length === 0) throw invalid(`table ${input.name} has no primary key: give at least one hash or range column`);
  const keySeen = new Set<string>();
  for (const k of keyCols) {
    if (!seen.has(k)) throw invalid(`primary key column ${k} is not a column of table ${input.name}`, { column: k });
    if (keySeen.has(k)) throw invalid(`primary key column ${k} is listed twice`, { column: k });
    keySeen.add(k);
  }
  if (keyCols.length === input.columns.length) {
    // A row needs no non-key column (the liveness column makes it exist), so this is allowed.
  }
  const families = checkFamilies(input.families, input.columns);
  const columns: ColumnDef[] = input.columns.map((c, i) => ({
    name: c.name,
    id: i + 1,
    type: c.type as ColumnDef['type'],
    // Key columns can never be null (a key component must exist to route and order the row).
    nullable: keySeen.has(c.name) ? false : c.nullable !== false,
    ...(c.family && c.family !== DEFAULT_FAMILY ? { family: c.family } : {}),
  }));
  const rf = input.replicationFactor || defaultRf;
  if (!Number.isInteger(rf) || rf < 1 || rf > 7) throw invalid(`replication factor ${rf} must be between 1 and 7`);
  if (rf > liveTServers) {
    throw invalid(`replication factor ${rf} is larger than the number of live tablet servers (${liveTServers} live)`, { liveTServers, replicationFactor: rf });
  }
  const splits = input.splitKeys?.length ?? 0;
  if (splits > 0 && input.hashColumns.length > 0) throw invalid(`table ${input.name} is hash partitioned: split points are for range tables (use --tablets)`);
  if (splits > 0 && input.numTablets && input.numTablets !== splits + 1) throw invalid(`${splits} split points make ${splits + 1} tablets, not ${input.numTablets}`);
  // A range table starts as one tablet unless split points say otherwise (docs/splitting.md).
  const numTablets = splits > 0 ? splits + 1 : input.numTablets || (input.hashColumns.length === 0 ? 1 : Math.max(1, liveTServers));
  if (!Number.isInteger(numTablets) || numTablets < 1 || numTablets > TABLETS_PER_TABLE_MAX) throw invalid(`number of tablets ${numTablets} must be between 1 and ${TABLETS_PER_TABLE_MAX}`);
  // A table without hash columns keeps every row at hash 0: one tablet is all it can use.
  if (input.hashColumns.length === 0 && numTablets > 1 && splits === 0) throw invalid(`table ${input.name} is range partitioned: give its ${numTablets - 1} split points (--split_at) instead of a tablet count`);
  const schema: TableSchema = { columns, hashColumns: [...input.hashColumns], rangeColumns: [...input.rangeColumns], ...(input.families?.length ? { families } : {}) };
  return { name: input.name, schema, numTablets, replicationFactor: rf };
}

export interface AlterTableInput {
  addColumns: Array<{ name: string; type: string; nullable?: boolean; family?: string }>;
  /** Families to add or redefine (by name), docs/cells.md. */
  setFamilies?: ColumnFamily[];
  dropColumns: string[];
  renameColumns: Array<{ from: string; to: string }>;
  /** '' = keep the name. */
  newName: string;
}

/**
 * ALTER TABLE checks (pure): the table's next name, schema and column id counter. Drops and renames
 * name columns of the current schema (renames see the names before the change; a column cannot be
 * dropped and renamed at once); added columns take fresh ids (a dropped column's id is never given
 * again, so its old values, still on disk until compaction, never reappear) and must be nullable —
 * existing rows have no value for them. Key columns can be renamed, not dropped.
 */
export function validateAlterTable(table: TableInfo, input: AlterTableInput): { name: string; schema: TableSchema; nextColumnId: number } {
  const { addColumns, dropColumns, renameColumns, newName } = input;
  const setFamilies = input.setFamilies ?? [];
  if (addColumns.length + dropColumns.length + renameColumns.length + setFamilies.length === 0 && (!newName || newName === table.name)) {
    throw invalid(`ALTER TABLE ${table.name} changes nothing: give columns to add, drop or rename, or a new name`);
  }
  if (newName) checkName('table', newName);
  const keyNames = new Set([...table.schema.hashColumns, ...table.schema.rangeColumns]);
  const byName = new Map(table.schema.columns.map((c) => [c.name, c]));
  const dropped = new Set<string>();
  for (const n of dropColumns) {
    if (!byName.has(n)) throw invalid(`column ${n} is not a column of table ${table.name}`, { column: n });
    if (keyNames.has(n)) throw invalid(`column ${n} is part of the primary key of table ${table.name} and cannot be dropped`, { column: n });
    if (dropped.has(n)) throw invalid(`column ${n} is dropped twice`, { column: n });
    dropped.add(n);
  }
  const renames = new Map<string, string>();
  for (const { from, to } of renameColumns) {
    if (!byName.has(from)) throw invalid(`column ${from} is not a column of table ${table.name}`, { column: from });
    if (dropped.has(from)) throw invalid(`column ${from} cannot be both dropped and renamed`, { column: from });
    if (renames.has(from)) throw invalid(`column ${from} is renamed twice`, { column: from });
    checkName('column', to);
    renames.set(from, to);
  }
  let nextId = nextColumnIdOf(table);
  const columns: ColumnDef[] = table.schema.columns.filter((c) => !dropped.has(c.name)).map((c) => ({ ...c, name: renames.get(c.name) ?? c.name }));
  for (const c of addColumns) {
    checkName('column', c.name);
    if (!isColumnType(c.type)) throw invalid(`column ${c.name} has unknown type '${c.type}' (one of ${COLUMN_TYPES.join(', ')})`, { column: c.name });
    if (c.nullable === false) throw invalid(`added column ${c.name} must be nullable: the table's existing rows have no value for it`, { column: c.name });
    columns.push({ name: c.name, id: nextId++, type: c.type, nullable: true, ...(c.family && c.family !== DEFAULT_FAMILY ? { family: c.family } : {}) });
  }
  const families = alteredFamilies(table.schema.families, setFamilies);
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw invalid(`table ${table.name} would have two columns named ${c.name}`, { column: c.name });
    seen.add(c.name);
  }
  if (columns.length > COLUMNS_PER_TABLE_MAX) throw invalid(`table ${table.name} would have ${columns.length} columns; at most ${COLUMNS_PER_TABLE_MAX}`);
  const key = (n: string): string => renames.get(n) ?? n;
  return {
    name: newName || table.name,
    schema: { columns, hashColumns: table.schema.hashColumns.map(key), rangeColumns: table.schema.rangeColumns.map(key), ...(families.length > 0 || columns.some((c) => c.family) ? { families: checkFamilies(families, columns) } : {}) },
    nextColumnId: nextId,
  };
}

/** The table's families with `set` applied: a new name is added, a known one redefined whole. */
function alteredFamilies(current: readonly ColumnFamily[] | undefined, set: readonly ColumnFamily[]): ColumnFamily[] {
  const out = [...(current ?? [])];
  const named = new Set<string>();
  for (const f of set) {
    const c = checkFamily(f);
    if (named.has(c.name)) throw invalid(`family ${c.name} is changed twice`, { family: c.name, part: 'NAME' });
    named.add(c.name);
    const i = out.findIndex((x) => x.name === c.name);
    if (i >= 0) out[i] = c;
    else out.push(c);
  }
  return out;
}

/** K contiguous hash ranges [start, end) covering 0x0000–0xFFFF; the last ends at 65536. */
export function hashPartitions(k: number): Partition[] {
  const out: Partition[] = [];
  for (let i = 0; i < k; i++) out.push({ start: Math.floor((i * HASH_SPACE) / k), end: Math.floor(((i + 1) * HASH_SPACE) / k) });
  return out;
}
