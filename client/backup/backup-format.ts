/**
 * tessera's export format (docs/backup.md): a directory with `manifest.json` (written last: an export
 * without it is incomplete) and, per table, part files `<table>/part-tTTTTT-NNNNN.ndjson` (a full
 * export's, per tablet; increments' `cells-NNNNN.ndjson`) of one JSON object per row in key order. Values keep their types: int64 as
 * {"$i":"…"}, bytes as {"$b":"base64"}, doubles that JSON cannot hold as {"$d":"NaN"|"Infinity"|
 * "-Infinity"}; strings, finite doubles, booleans and null as themselves. Each part has its byte
 * count and sha256; each table a digest over all its lines in order, which an import recomputes
 * from the imported table to show it holds exactly what was exported.
 */
import { createHash, type Hash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import type { ColumnSpec, ColumnValue, Row } from '../client-types';

export const EXPORT_FORMAT = 'tessera-export';
/** Version 2 added incremental exports (`kind`, `sinceHt`, `changedRows`); version 1 exports (all full) still read. */
export const EXPORT_FORMAT_VERSION = 2;
const READABLE_VERSIONS: ReadonlySet<number> = new Set([1, 2]);
export const MANIFEST_FILE = 'manifest.json';

export interface PartEntry {
  /** Relative to the export directory. */
  file: string;
  rows: number;
  bytes: number;
  sha256: string;
  /** A full export's part holds the rows of one tablet: its ordinal in the table's partition order. */
  tablet?: number;
}

export interface TableEntry {
  name: string;
  columns: ColumnSpec[];
  primaryKey: { hash: string[]; range: string[] };
  numTablets: number;
  durability?: string;
  /** Rows of the table at the cut (an increment's too: what a chain restores to). */
  rows: number;
  /** sha256 over every row line (with its newline) in key order, of the table at the cut. */
  digest: string;
  /** An increment's lines: the rows with a cell in the window (its parts hold these, not `rows`). */
  changedRows?: number;
  parts: PartEntry[];
}

export type ExportKind = 'full' | 'incremental';

export interface Manifest {
  format: typeof EXPORT_FORMAT;
  version: number;
  /** Absent in version 1: full. */
  kind?: ExportKind;
  /** An increment's window is (sinceHt, cutHt]: the cut of the export it follows, up to its own cut. */
  sinceHt?: string;
  /** The hybrid time every table was read at (decimal): one consistent cut. */
  cutHt: string;
  /** Wall-clock time of the cut (ISO 8601). */
  cutTime: string;
  tables: TableEntry[];
}

/** One value as the export format writes it (common/export-line.ts). */
export { encodeLineValue as encodeValue } from '../../common/export-line';

export function decodeValue(v: unknown, where: string): ColumnValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o['$i'] === 'string' && /^-?\d+$/.test(o['$i'])) return BigInt(o['$i']);
    if (typeof o['$b'] === 'string') return new Uint8Array(Buffer.from(o['$b'], 'base64'));
    if (o['$d'] === 'NaN' || o['$d'] === 'Infinity' || o['$d'] === '-Infinity') return Number(o['$d']);
  }
  throw new DbError(ErrorCode.CORRUPTION, `${where}: a value of an unknown shape: ${JSON.stringify(v).slice(0, 80)}`);
}

/** One row as its line (with the newline): common/export-line.ts, which a tablet server's export scan uses too. */
export { encodeLine as encodeRow } from '../../common/export-line';

export function decodeRow(line: string, where: string): Row {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    throw new DbError(ErrorCode.CORRUPTION, `${where}: not a JSON row`);
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new DbError(ErrorCode.CORRUPTION, `${where}: not a JSON object`);
  const row: Row = {};
  for (const [k, v] of Object.entries(o as Record<string, unknown>)) row[k] = decodeValue(v, `${where}, column ${k}`);
  return row;
}

/** A running digest of row lines: the export's table digest, and the import's check of the table it made. */
export class RowDigest {
  private readonly h: Hash = createHash('sha256');
  rows = 0;
  add(line: string): void {
    this.h.update(line);
    this.rows++;
  }
  /** `rows` lines at once, as their UTF-8 bytes (the same digest as adding each line). */
  addLines(bytes: Uint8Array, rows: number): void {
    this.h.update(bytes);
    this.rows += rows;
  }
  hex(): string {
    return this.h.digest('hex');
  }
}

/** The manifest of `dir`, checked for shape; a missing one means the export never finished. */
export function readManifest(dir: string): Manifest {
  const file = path.join(dir, MANIFEST_FILE);
  if (!fs.existsSync(file)) throw new DbError(ErrorCode.NOT_FOUND, `${dir} has no ${MANIFEST_FILE}: not an export, or one that did not finish`);
  let m: Manifest;
  try {
    m = JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  } catch (e) {
    throw new DbError(ErrorCode.CORRUPTION, `${file} is not JSON: ${(e as Error).message}`);
  }
  if (m?.format !== EXPORT_FORMAT) throw new DbError(ErrorCode.CORRUPTION, `${file}: format is ${JSON.stringify(m?.format)}, not ${EXPORT_FORMAT}`);
  if (!READABLE_VERSIONS.has(m.version)) throw new DbError(ErrorCode.NOT_SUPPORTED, `${file}: format version ${m.version}; this tessera reads versions ${[...READABLE_VERSIONS].join(', ')}`);
  m.kind ??= 'full';
  if (m.kind !== 'full' && m.kind !== 'incremental') throw new DbError(ErrorCode.CORRUPTION, `${file}: kind ${JSON.stringify(m.kind)} is neither full nor incremental`);
  if (m.kind === 'incremental' && (typeof m.sinceHt !== 'string' || !/^\d+$/.test(m.sinceHt))) throw new DbError(ErrorCode.CORRUPTION, `${file}: an incremental export without its window start (sinceHt)`);
  if (!/^\d+$/.test(m.cutHt)) throw new DbError(ErrorCode.CORRUPTION, `${file}: cutHt ${JSON.stringify(m.cutHt)} is not a hybrid time`);
  if (!Array.isArray(m?.tables) || typeof m.cutHt !== 'string') throw new DbError(ErrorCode.CORRUPTION, `${file}: tables or cutHt missing`);
  for (const t of m.tables) {
    if (typeof t.name !== 'string' || !Array.isArray(t.columns) || !Array.isArray(t.parts) || typeof t.digest !== 'string' || typeof t.rows !== 'number') throw new DbError(ErrorCode.CORRUPTION, `${file}: table entry ${JSON.stringify(t?.name)} is incomplete`);
    for (const p of t.parts) if (typeof p.file !== 'string' || p.file.includes('..') || path.isAbsolute(p.file)) throw new DbError(ErrorCode.CORRUPTION, `${file}: part ${JSON.stringify(p?.file)} of ${t.name} is not a file inside the export`);
  }
  return m;
}

/** Check every part's size and sha256 before anything is imported: what is wrong, named. */
export async function verifyParts(dir: string, t: TableEntry): Promise<void> {
  let rows = 0;
  for (const p of t.parts) {
    const file = path.join(dir, p.file);
    if (!fs.existsSync(file)) throw new DbError(ErrorCode.CORRUPTION, `${t.name}: part ${p.file} is missing`);
    const size = fs.statSync(file).size;
    if (size !== p.bytes) throw new DbError(ErrorCode.CORRUPTION, `${t.name}: part ${p.file} has ${size} bytes, the manifest says ${p.bytes}`);
    const h = createHash('sha256');
    for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
    const got = h.digest('hex');
    if (got !== p.sha256) throw new DbError(ErrorCode.CORRUPTION, `${t.name}: part ${p.file} is damaged (sha256 ${got.slice(0, 12)}…, the manifest says ${p.sha256.slice(0, 12)}…)`);
    rows += p.rows;
  }
  const want = t.changedRows ?? t.rows;
  if (rows !== want) throw new DbError(ErrorCode.CORRUPTION, `${t.name}: its parts hold ${rows} lines, the manifest says ${want}`);
}
