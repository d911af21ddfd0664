/**
 * `tessera admin export` / `import` (docs/backup.md). Export reads every listed table at one hybrid
 * time with no uncertainty window — one snapshot for all tables and tablets, so no transaction is half in —
 * and streams the rows to part files with bounded memory (one scan page and one part's hash at a
 * time). Import checks the whole export first (every part's size and sha256), loads each table into
 * a hidden table of its own, checks the loaded table's digest against the manifest's, and only then
 * renames it to its name: a damaged export is refused before anything is created, and a failed load
 * leaves nothing visible (the hidden table is dropped).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { DbError, ErrorCode } from '../../common/errors';
import { htToJson } from '../../common/hybrid-time';
import type { ColumnType, Row } from '../client-types';
import type { TesseraClient } from '../tessera-client';
import { decodeRow, encodeRow, EXPORT_FORMAT, EXPORT_FORMAT_VERSION, MANIFEST_FILE, readManifest, RowDigest, verifyParts, type Manifest, type PartEntry, type TableEntry } from './backup-format';

/** A part file is closed once it reaches this many bytes. */
export const PART_BYTES_MAX = 64 * 1024 * 1024;
/** Rows per write RPC and write RPCs in flight while importing. */
const IMPORT_BATCH_ROWS = 1000;
const IMPORT_CONCURRENCY = 4;
/** Deadline of a whole table's scan or load (a large table takes minutes). */
const TABLE_TIMEOUT_MS = 3_600_000;

export interface BackupProgress {
  (line: string): void;
}

export interface ExportOptions {
  tables: string[];
  to: string;
  /** The cut: a past hybrid time (within history retention); default now. */
  asOfHt?: bigint;
  progress?: BackupProgress;
  /** Report every this many rows (default 100,000). */
  progressEveryRows?: number;
}

async function tableEntryBase(client: TesseraClient, name: string): Promise<Omit<TableEntry, 'rows' | 'digest' | 'parts'>> {
  const { schema } = await client.tableLocations(name);
  const summary = (await client.listTables()).find((t) => t.name === name);
  return {
    name,
    columns: schema.columns.map((c) => ({ name: c.name, type: c.type as ColumnType, ...(c.nullable ? {} : { nullable: false }) })),
    primaryKey: { hash: schema.hash.map((c) => c.name), range: schema.range.map((c) => c.name) },
    numTablets: summary?.numTablets ?? 1,
    ...(summary?.durability ? { durability: summary.durability } : {}),
  };
}

/** Write one table's rows (read in `txn`'s snapshot) into part files under `dir/<table>/`. */
async function exportTable(rows: AsyncIterable<Row>, dir: string, table: string, o: ExportOptions): Promise<{ rows: number; digest: string; parts: PartEntry[] }> {
  fs.mkdirSync(path.join(dir, table), { recursive: true });
  const digest = new RowDigest();
  const parts: PartEntry[] = [];
  let part: { file: string; fd: number; rows: number; bytes: number; hash: RowDigest } | undefined;
  const close = (): void => {
    if (!part) return;
    fs.fsyncSync(part.fd);
    fs.closeSync(part.fd);
    parts.push({ file: part.file, rows: part.rows, bytes: part.bytes, sha256: part.hash.hex() });
    part = undefined;
  };
  const every = o.progressEveryRows ?? 100_000;
  for await (const row of rows) {
    if (!part) {
      const file = path.join(table, `part-${String(parts.length).padStart(5, '0')}.ndjson`);
      part = { file, fd: fs.openSync(path.join(dir, file), 'w'), rows: 0, bytes: 0, hash: new RowDigest() };
    }
    const line = encodeRow(row);
    const buf = Buffer.from(line);
    fs.writeSync(part.fd, buf);
    part.rows++;
    part.bytes += buf.length;
    part.hash.add(line);
    digest.add(line);
    if (digest.rows % every === 0) o.progress?.(`export ${table}: ${digest.rows} rows`);
    if (part.bytes >= PART_BYTES_MAX) close();
  }
  close();
  return { rows: digest.rows, digest: digest.hex(), parts };
}

/** Export `tables` as of one snapshot into `to` (which must be new or empty). */
export async function exportTables(client: TesseraClient, o: ExportOptions): Promise<Manifest> {
  if (o.tables.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'export: name at least one table (--tables a,b)');
  if (new Set(o.tables).size !== o.tables.length) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'export: a table is named twice');
  if (fs.existsSync(o.to) && fs.readdirSync(o.to).length > 0) throw new DbError(ErrorCode.ALREADY_EXISTS, `export: ${o.to} is not empty (an export goes into a new directory)`);
  fs.mkdirSync(o.to, { recursive: true });
  const bases = await Promise.all(o.tables.map((t) => tableEntryBase(client, t)));
  // The cut: a hybrid time from the cluster (a transaction's read time, then the transaction is
  // dropped). Every table is read at exactly that time with no uncertainty window, so all tablets
  // show one snapshot: a transaction still pending there commits above it (docs/transactions.md).
  const probe = await client.beginTransaction();
  const nowHt = probe.readHt;
  await probe.abort().catch(() => undefined);
  if (o.asOfHt !== undefined && o.asOfHt > nowHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export: --as_of ${htToJson(o.asOfHt).iso} is in the future (the cluster's time is ${htToJson(nowHt).iso})`);
  const cutHt = o.asOfHt ?? nowHt;
  o.progress?.(`export: ${o.tables.length} table(s) at hybrid time ${cutHt}`);
  const tables: TableEntry[] = [];
  for (const b of bases) {
    const r = await exportTable(client.table(b.name).scanRows({ readHt: cutHt, timeoutMs: TABLE_TIMEOUT_MS }), o.to, b.name, o);
    tables.push({ ...b, ...r });
    o.progress?.(`export ${b.name}: ${r.rows} rows in ${r.parts.length} part(s)`);
  }
  const m: Manifest = { format: EXPORT_FORMAT, version: EXPORT_FORMAT_VERSION, cutHt: cutHt.toString(), cutTime: htToJson(cutHt).iso, tables };
  // The manifest last, whole or not at all: an export without one is incomplete.
  const tmp = path.join(o.to, `${MANIFEST_FILE}.tmp`);
  fs.writeFileSync(tmp, `${JSON.stringify(m, null, 2)}\n`);
  fs.renameSync(tmp, path.join(o.to, MANIFEST_FILE));
  return m;
}

export interface ImportOptions {
  from: string;
  /** Only these tables of the export (default: all). */
  tables?: string[];
  /** The new table's name (with exactly one table). */
  into?: string;
  progress?: BackupProgress;
}

/** Digest of a table's rows as the export writes them (key order). */
export async function tableDigest(client: TesseraClient, name: string): Promise<{ rows: number; digest: string }> {
  const d = new RowDigest();
  for await (const row of client.table(name).scanRows({ timeoutMs: TABLE_TIMEOUT_MS })) d.add(encodeRow(row));
  return { rows: d.rows, digest: d.hex() };
}

async function loadTable(client: TesseraClient, dir: string, t: TableEntry, hidden: string, progress?: BackupProgress): Promise<void> {
  const table = client.table(hidden);
  let batch: Row[] = [];
  let loaded = 0;
  const inflight: Array<Promise<void>> = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    inflight.push(table.upsertMany(rows, { timeoutMs: TABLE_TIMEOUT_MS }));
    if (inflight.length >= IMPORT_CONCURRENCY) await inflight.shift();
    loaded += rows.length;
    if (loaded % 100_000 < IMPORT_BATCH_ROWS) progress?.(`import ${t.name}: ${loaded} of ${t.rows} rows`);
  };
  for (const p of t.parts) {
    const lines = readline.createInterface({ input: fs.createReadStream(path.join(dir, p.file), 'utf8'), crlfDelay: Infinity });
    let n = 0;
    for await (const line of lines) {
      n++;
      batch.push(decodeRow(line, `${p.file} line ${n}`));
      if (batch.length >= IMPORT_BATCH_ROWS) await flush();
    }
  }
  await flush();
  await Promise.all(inflight);
}

/** Import tables of an export into new tables; each is checked against the manifest's digest before it gets its name. */
export async function importTables(client: TesseraClient, o: ImportOptions): Promise<Array<{ table: string; rows: number }>> {
  const m = readManifest(o.from);
  const wanted = o.tables ?? m.tables.map((t) => t.name);
  const entries = wanted.map((n) => {
    const t = m.tables.find((x) => x.name === n);
    if (!t) throw new DbError(ErrorCode.NOT_FOUND, `import: the export has no table ${n} (it has ${m.tables.map((x) => x.name).join(', ')})`);
    return t;
  });
  if (o.into !== undefined && entries.length !== 1) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'import: --into names the new table of exactly one table (use --tables)');
  // Everything is checked before anything is created.
  for (const t of entries) await verifyParts(o.from, t);
  const existing = new Set((await client.listTables()).map((t) => t.name));
  for (const t of entries) {
    const target = o.into ?? t.name;
    if (existing.has(target)) throw new DbError(ErrorCode.ALREADY_EXISTS, `import: table ${target} exists (import into a new name with --into)`);
  }
  const out: Array<{ table: string; rows: number }> = [];
  for (const t of entries) {
    const target = o.into ?? t.name;
    const hidden = `${target}__importing_${randomBytes(4).toString('hex')}`;
    await client.createTable({ name: hidden, columns: t.columns, primaryKey: t.primaryKey, numTablets: t.numTablets, ...(t.durability === 'ASYNC' || t.durability === 'FLUSH' || t.durability === 'FSYNC' ? { durability: t.durability } : {}) });
    try {
      o.progress?.(`import ${t.name}: loading ${t.rows} rows into ${hidden}`);
      await loadTable(client, o.from, t, hidden, o.progress);
      const got = await tableDigest(client, hidden);
      if (got.rows !== t.rows || got.digest !== t.digest) throw new DbError(ErrorCode.CORRUPTION, `import ${t.name}: the loaded table holds ${got.rows} rows with digest ${got.digest.slice(0, 12)}…, the export ${t.rows} with ${t.digest.slice(0, 12)}…`);
      await client.alterTable(hidden, { renameTo: target });
    } catch (e) {
      await client.dropTable(hidden, { ifExists: true }).catch(() => undefined);
      throw e;
    }
    o.progress?.(`import ${t.name}: ${t.rows} rows in ${target}, digest checked`);
    out.push({ table: target, rows: t.rows });
  }
  return out;
}
