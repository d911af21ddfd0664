/**
 * A tablet's identity, schema and initial Raft peers, persisted as DATA/tablets/<id>/meta.json so the
 * tablet manager can reopen every tablet at startup.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { writeFileDurably } from '../../common/fs-dirs';
import { isWalDurability, type WalDurability } from '../../raft';
import { checkFamilies, type ColumnFamily } from '../../common/column-families';

export const COLUMN_TYPES = ['int64', 'double', 'string', 'bytes', 'bool'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export interface ColumnSchema {
  name: string;
  id: number;
  type: ColumnType;
  nullable: boolean;
  /** Column family (docs/cells.md); absent: `default`. */
  family?: string;
}

export interface TableSchema {
  columns: ColumnSchema[];
  hashColumns: string[];
  rangeColumns: string[];
  /** Families with their retention: they travel with the schema, so every replica applies the same. */
  families?: ColumnFamily[];
}

export interface RaftPeer {
  uuid: string;
  rpcAddress: string;
  memberType: 'VOTER' | 'LEARNER';
}

export interface TabletMeta {
  tabletId: string;
  tableId: string;
  tableName: string;
  schema: TableSchema;
  /** Hash partition [start, end) of 0..65536; range tables: encoded DocKey bounds as hex ('' or absent = open). */
  partition: { start: number; end: number; keyStart?: string; keyEnd?: string };
  /** Set when this tablet applied a SPLIT (docs/splitting.md): it serves nothing more and names its children. */
  splitInto?: SplitChildMeta[];
  /** Peers at creation; the live configuration is Raft's (log + conf state). */
  peers: RaftPeer[];
  /** The table's schema version this replica has (ALTER TABLE; 0 at creation). */
  schemaVersion: number;
  /** The table's Raft log level (docs/durability.md); absent: FSYNC. */
  durability?: WalDurability;
  /**
   * A split child whose RegularDB was made from hard links of the parent's files (docs/splitting.md):
   * it holds the parent's other rows too, hidden from every read (docdb/range-hiding-engine.ts) and
   * deleted in the background after it opens.
   */
  splitLinked?: boolean;
  /** Row lock fencing epochs are this + the Raft term (docs/rows.md); a split child's is above its parent's. */
  rowLockEpochBase?: number;
}

/** A child of a split tablet as its parent remembers it (the answer TABLET_SPLIT carries). */
export interface SplitChildMeta {
  tabletId: string;
  partition: { start: number; end: number; keyStart?: string; keyEnd?: string };
}

export const META_FILE = 'meta.json';

export function writeTabletMeta(dir: string, meta: TabletMeta): void {
  writeFileDurably(dir, META_FILE, JSON.stringify(meta, null, 2));
}

export function readTabletMeta(dir: string): TabletMeta {
  let v: unknown;
  try {
    v = JSON.parse(fs.readFileSync(path.join(dir, META_FILE), 'utf8'));
  } catch (e) {
    throw new DbError(ErrorCode.CORRUPTION, `cannot read ${path.join(dir, META_FILE)}: ${(e as Error).message}`);
  }
  return parseTabletMeta(v);
}

/** Validate a meta object (from disk or built from a CreateTablet request). */
export function parseTabletMeta(v: unknown): TabletMeta {
  const bad = (why: string): DbError => new DbError(ErrorCode.INVALID_ARGUMENT, `bad tablet metadata: ${why}`);
  if (typeof v !== 'object' || v === null) throw bad('not an object');
  const o = v as Record<string, unknown>;
  const str = (k: string): string => {
    const x = o[k];
    if (typeof x !== 'string') throw bad(`${k} must be a string`);
    return x;
  };
  const tabletId = str('tabletId');
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(tabletId)) throw bad('tabletId must be 1-128 characters of [A-Za-z0-9_.-]');
  const schema = parseSchema(o['schema'], bad);
  const p = o['partition'] as Record<string, unknown> | undefined;
  const start = Number(p?.['start'] ?? 0);
  const end = Number(p?.['end'] ?? 65536);
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > 65536 || start >= end) throw bad('partition must be 0 <= start < end <= 65536');
  const keyBounds = parseKeyBounds(p, bad);
  const peers = parsePeers(o['peers'], bad);
  const sv = o['schemaVersion'] ?? 0;
  if (typeof sv !== 'number' || !Number.isSafeInteger(sv) || sv < 0) throw bad('schemaVersion must be a non-negative integer');
  const d = o['durability'];
  if (d !== undefined && d !== '' && !isWalDurability(d)) throw bad('durability must be ASYNC, FLUSH or FSYNC');
  const durability = isWalDurability(d) ? { durability: d } : {};
  const splitInto = parseSplitInto(o['splitInto'], bad);
  const eb = o['rowLockEpochBase'];
  if (eb !== undefined && (typeof eb !== 'number' || !Number.isSafeInteger(eb) || eb < 0)) throw bad('rowLockEpochBase must be a non-negative integer');
  return { tabletId, tableId: str('tableId'), tableName: str('tableName'), schema, partition: { start, end, ...keyBounds }, peers, schemaVersion: sv, ...durability, ...(splitInto ? { splitInto } : {}), ...(o['splitLinked'] === true ? { splitLinked: true } : {}), ...(eb !== undefined ? { rowLockEpochBase: eb } : {}) };
}

function parseKeyBounds(p: Record<string, unknown> | undefined, bad: (why: string) => DbError): { keyStart?: string; keyEnd?: string } {
  const out: { keyStart?: string; keyEnd?: string } = {};
  for (const k of ['keyStart', 'keyEnd'] as const) {
    const v = p?.[k];
    if (v === undefined || v === '') continue;
    if (typeof v !== 'string' || !/^(?:[0-9a-f]{2})+$/.test(v)) throw bad(`partition.${k} must be lower-case hex`);
    out[k] = v;
  }
  if (out.keyStart && out.keyEnd && out.keyStart >= out.keyEnd) throw bad('partition.keyStart must be below keyEnd');
  return out;
}

function parsePeers(peersRaw: unknown, bad: (why: string) => DbError): RaftPeer[] {
  if (!Array.isArray(peersRaw) || peersRaw.length === 0) throw bad('peers must be a non-empty list');
  return peersRaw.map((x: unknown) => {
    const r = x as Record<string, unknown>;
    if (typeof r?.['uuid'] !== 'string' || r['uuid'] === '' || typeof r['rpcAddress'] !== 'string') throw bad('peer needs uuid and rpcAddress');
    const mt = r['memberType'] === 'LEARNER' ? 'LEARNER' : 'VOTER';
    return { uuid: r['uuid'], rpcAddress: r['rpcAddress'], memberType: mt };
  });
}

/** The Raft peers of a SPLIT entry's children, checked like meta.json's. */
export function parseSplitPeers(v: unknown): RaftPeer[] {
  return parsePeers(v, (why) => new DbError(ErrorCode.CORRUPTION, `bad split: ${why}`));
}

/** The children of a SPLIT entry, checked like meta.json's. */
export function parseSplitChildren(v: unknown): SplitChildMeta[] {
  return parseSplitInto(v, (why) => new DbError(ErrorCode.CORRUPTION, `bad split: ${why}`)) ?? [];
}

function parseSplitInto(v: unknown, bad: (why: string) => DbError): SplitChildMeta[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length !== 2) throw bad('splitInto must list two children');
  return v.map((c: unknown) => {
    const r = c as Record<string, unknown>;
    if (typeof r?.['tabletId'] !== 'string') throw bad('splitInto: a child needs a tabletId');
    const p = r['partition'] as Record<string, unknown> | undefined;
    return { tabletId: r['tabletId'], partition: { start: Number(p?.['start'] ?? 0), end: Number(p?.['end'] ?? 65536), ...parseKeyBounds(p, bad) } };
  });
}

/** A table schema from JSON (a CHANGE_SCHEMA entry), checked like meta.json's. */
export function parseTableSchema(v: unknown): TableSchema {
  return parseSchema(v, (why) => new DbError(ErrorCode.CORRUPTION, `bad table schema: ${why}`));
}

function parseSchema(v: unknown, bad: (w: string) => DbError): TableSchema {
  if (typeof v !== 'object' || v === null) throw bad('schema missing');
  const o = v as Record<string, unknown>;
  const cols = o['columns'];
  if (!Array.isArray(cols) || cols.length === 0) throw bad('schema needs columns');
  const seenIds = new Set<number>();
  const seenNames = new Set<string>();
  const columns: ColumnSchema[] = cols.map((c: unknown) => {
    const r = c as Record<string, unknown>;
    const name = r?.['name'];
    const id = Number(r?.['id']);
    const type = r?.['type'];
    if (typeof name !== 'string' || name === '') throw bad('column needs a name');
    if (!Number.isInteger(id) || id < 0 || seenIds.has(id)) throw bad(`column ${name}: bad or duplicate id`);
    if (seenNames.has(name)) throw bad(`duplicate column ${name}`);
    if (typeof type !== 'string' || !(COLUMN_TYPES as readonly string[]).includes(type)) throw bad(`column ${name}: unknown type ${String(type)}`);
    seenIds.add(id);
    seenNames.add(name);
    const fam = r['family'];
    if (fam !== undefined && typeof fam !== 'string') throw bad(`column ${name}: family must be a string`);
    return { name, id, type: type as ColumnType, nullable: r['nullable'] === true, ...(fam ? { family: fam } : {}) };
  });
  const names = (k: string): string[] => {
    const a = o[k];
    if (a === undefined) return [];
    if (!Array.isArray(a) || !a.every((x) => typeof x === 'string' && seenNames.has(x))) throw bad(`${k} must name schema columns`);
    return a as string[];
  };
  const hashColumns = names('hashColumns');
  const rangeColumns = names('rangeColumns');
  if (hashColumns.length + rangeColumns.length === 0) throw bad('schema has no primary key');
  const famRaw = o['families'];
  if (famRaw !== undefined && !Array.isArray(famRaw)) throw bad('families must be a list');
  let families: ColumnFamily[] | undefined;
  try {
    families = famRaw || columns.some((c) => c.family) ? checkFamilies((famRaw ?? []) as ColumnFamily[], columns) : undefined;
  } catch (e) {
    throw bad((e as Error).message);
  }
  return { columns, hashColumns, rangeColumns, ...(families && families.length > 0 ? { families } : {}) };
}

/**
 * The column ids DocDB keeps for a replica with this metadata (DocDbApi.setSchemaColumns): the
 * schema's, once the table was altered; undefined before (no column was ever dropped, and DocDB then
 * ignores and deletes nothing — a status tablet's `transactions` table is never altered). A column id
 * absent from the schema is one of a dropped column, never of one added later: the master never gives
 * an id twice (master/ddl-validation.ts), and a replica takes a schema before any write of its added
 * columns (the CHANGE_SCHEMA entry precedes them in the log; a snapshot brings its source's schema).
 */
export function schemaColumnIds(meta: TabletMeta): number[] | undefined {
  return meta.schemaVersion > 0 ? meta.schema.columns.map((c) => c.id) : undefined;
}
