/**
 * CreateTable checks (pure): every bad definition is refused with a clear INVALID_ARGUMENT before
 * anything is replicated. Column ids are assigned here, 1-based in declaration order.
 */
import { DbError, ErrorCode } from '../common/errors';
import { COLUMN_TYPES, HASH_SPACE, isColumnType, type ColumnDef, type Partition, type TableSchema } from './catalog-types';

/** Tablets per table (each is a Raft group on RF servers: bounded by what one lab cluster can host). */
export const TABLETS_PER_TABLE_MAX = 256;
export const COLUMNS_PER_TABLE_MAX = 1000;
export const NAME_CHARS_MAX = 128;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface CreateTableInput {
  name: string;
  columns: Array<{ name: string; type: string; nullable?: boolean }>;
  hashColumns: string[];
  rangeColumns: string[];
  /** 0 = default (one tablet per live tserver, at least 1). */
  numTablets: number;
  /** 0 = default (the replication_factor flag). */
  replicationFactor: number;
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
  const columns: ColumnDef[] = input.columns.map((c, i) => ({
    name: c.name,
    id: i + 1,
    type: c.type as ColumnDef['type'],
    // Key columns can never be null (a key component must exist to route and order the row).
    nullable: keySeen.has(c.name) ? false : c.nullable !== false,
  }));
  const rf = input.replicationFactor || defaultRf;
  if (!Number.isInteger(rf) || rf < 1 || rf > 7) throw invalid(`replication factor ${rf} must be between 1 and 7`);
  if (rf > liveTServers) {
    throw invalid(`replication factor ${rf} is larger than the number of live tablet servers (${liveTServers} live)`, { liveTServers, replicationFactor: rf });
  }
  const numTablets = input.numTablets || Math.max(1, liveTServers);
  if (!Number.isInteger(numTablets) || numTablets < 1 || numTablets > TABLETS_PER_TABLE_MAX) throw invalid(`number of tablets ${numTablets} must be between 1 and ${TABLETS_PER_TABLE_MAX}`);
  // A table without hash columns keeps every row at hash 0: one tablet is all it can use.
  if (input.hashColumns.length === 0 && numTablets > 1) throw invalid(`table ${input.name} has no hash columns, so it cannot be split into ${numTablets} tablets (use 1)`);
  return { name: input.name, schema: { columns, hashColumns: [...input.hashColumns], rangeColumns: [...input.rangeColumns] }, numTablets, replicationFactor: rf };
}

/** K contiguous hash ranges [start, end) covering 0x0000–0xFFFF; the last ends at 65536. */
export function hashPartitions(k: number): Partition[] {
  const out: Partition[] = [];
  for (let i = 0; i < k; i++) out.push({ start: Math.floor((i * HASH_SPACE) / k), end: Math.floor(((i + 1) * HASH_SPACE) / k) });
  return out;
}
