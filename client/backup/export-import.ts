/**
 * `tessera admin import` (docs/backup.md), and the export's entry points re-exported. Import checks
 * the whole chain first (its links, every part's size and sha256), loads each table's full export into
 * a hidden table of its own, applies the increments up to the restore point, checks the loaded
 * table's digest against the manifest of the link whose cut it is, and only then renames it to its
 * name: a damaged or broken chain is refused before anything is created, and a failed load leaves
 * nothing visible (the hidden table is dropped).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { DbError, ErrorCode } from '../../common/errors';
import type { Row } from '../client-types';
import type { TesseraClient } from '../tessera-client';
import { decodeRow, readManifest, RowDigest, verifyParts, type TableEntry } from './backup-format';
import { checkChain, type ChainLink, type ChainPlan } from './chain';
import { SCAN_PAGE_ROWS, TABLE_TIMEOUT_MS, type BackupProgress } from './export-tables';
import { decodeChangedRow, materializeRow, type ChangedRow } from './increment-lines';
import { RowLoader } from './row-loader';
import { scanLinesAhead } from './tablet-scan-ahead';

export { exportTables, type BackupProgress, type ExportOptions } from './export-tables';

/** Rows per write RPC and write RPCs in flight while importing. */
const IMPORT_BATCH_ROWS = 3000;
const IMPORT_CONCURRENCY = 4;
/** Changed rows of an increment applied per round (their current rows read, then one write each way). */
const APPLY_BATCH_ROWS = 500;
/** Point reads in flight while applying an increment. */
const APPLY_READS_IN_FLIGHT = 32;

export interface ImportOptions {
  /** An export directory, or a chain: a full export then its increments in order. */
  from: string | readonly string[];
  /** The restore point inside the chain (default: the last link's cut). */
  asOfHt?: bigint;
  /** Only these tables of the export (default: all). */
  tables?: string[];
  /** The new table's name (with exactly one table). */
  into?: string;
  progress?: BackupProgress;
}

/** Digest of a table's rows as the export writes them (key order), read at one snapshot (now). */
export async function tableDigest(client: TesseraClient, name: string): Promise<{ rows: number; digest: string }> {
  const d = new RowDigest();
  // One read time for every tablet's scan, as an export's cut (its tablets are read side by side).
  const probe = await client.beginTransaction();
  const readHt = probe.readHt;
  await probe.abort().catch(() => undefined);
  for await (const page of scanLinesAhead(client, name, { readHt, timeoutMs: TABLE_TIMEOUT_MS, pageSize: SCAN_PAGE_ROWS })) d.addLines(page.lines, page.rows);
  return { rows: d.rows, digest: d.hex() };
}

async function loadTable(client: TesseraClient, dir: string, t: TableEntry, hidden: string, progress?: BackupProgress): Promise<void> {
  let next = 100_000;
  const loader = new RowLoader(client, hidden, {
    batchRows: IMPORT_BATCH_ROWS,
    inFlight: IMPORT_CONCURRENCY,
    timeoutMs: TABLE_TIMEOUT_MS,
    onBatch: (n) => {
      if (n < next) return;
      next += 100_000;
      progress?.(`import ${t.name}: ${n} of ${t.rows} rows`);
    },
  });
  for (const p of t.parts) {
    const lines = readline.createInterface({ input: fs.createReadStream(path.join(dir, p.file), 'utf8'), crlfDelay: Infinity });
    let n = 0;
    for await (const line of lines) {
      n++;
      await loader.add(decodeRow(line, `${p.file} line ${n}`));
    }
  }
  await loader.finish();
}

/** Read the current rows of `keys` (in bounded parallel point reads). */
async function currentRows(client: TesseraClient, table: string, keys: readonly Row[]): Promise<Array<Row | undefined>> {
  const out: Array<Row | undefined> = new Array(keys.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < keys.length) {
      const i = next++;
      out[i] = await client.table(table).get(keys[i]!, { timeoutMs: TABLE_TIMEOUT_MS });
    }
  };
  await Promise.all(Array.from({ length: Math.min(APPLY_READS_IN_FLIGHT, keys.length) }, worker));
  return out;
}

/** Apply one increment's changed rows of `t` to `hidden`, each as of `uptoHt`. */
async function applyIncrement(client: TesseraClient, dir: string, t: TableEntry, hidden: string, uptoHt: bigint, progress?: BackupProgress): Promise<void> {
  const keyColumns = [...t.primaryKey.hash, ...t.primaryKey.range];
  const valueColumns = t.columns.map((c) => c.name).filter((c) => !keyColumns.includes(c));
  let batch: ChangedRow[] = [];
  let applied = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const rows = batch;
    batch = [];
    const bases = await currentRows(client, hidden, rows.map((r) => r.key));
    const upserts: Row[] = [];
    const deletes: Row[] = [];
    rows.forEach((r, i) => {
      const c = materializeRow(bases[i], r, uptoHt, keyColumns, valueColumns);
      if (c.type === 'upsert') upserts.push(c.row);
      else if (c.type === 'delete') deletes.push(r.key);
    });
    // Distinct rows: the order of the two writes does not matter.
    await Promise.all([upserts.length ? client.table(hidden).upsertMany(upserts, { timeoutMs: TABLE_TIMEOUT_MS }) : undefined, deletes.length ? client.table(hidden).deleteMany(deletes, { timeoutMs: TABLE_TIMEOUT_MS }) : undefined]);
    applied += rows.length;
  };
  for (const p of t.parts) {
    const lines = readline.createInterface({ input: fs.createReadStream(path.join(dir, p.file), 'utf8'), crlfDelay: Infinity });
    let n = 0;
    for await (const line of lines) {
      n++;
      batch.push(decodeChangedRow(line, `${p.file} line ${n}`));
      if (batch.length >= APPLY_BATCH_ROWS) await flush();
    }
  }
  await flush();
  progress?.(`import ${t.name}: applied ${applied} changed rows up to ${uptoHt}`);
}

/** The chain's manifests, checked, and every part of every table to import checked too. */
async function planImport(o: ImportOptions): Promise<{ plan: ChainPlan; entries: TableEntry[] }> {
  const dirs = typeof o.from === 'string' ? [o.from] : [...o.from];
  const links: ChainLink[] = dirs.map((dir) => ({ dir, m: readManifest(dir) }));
  const full = links[0]!.m;
  const wanted = o.tables ?? full.tables.map((t) => t.name);
  const entries = wanted.map((n) => {
    const t = full.tables.find((x) => x.name === n);
    if (!t) throw new DbError(ErrorCode.NOT_FOUND, `import: the export has no table ${n} (it has ${full.tables.map((x) => x.name).join(', ')})`);
    return t;
  });
  if (o.into !== undefined && entries.length !== 1) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'import: --into names the new table of exactly one table (use --tables)');
  const plan = checkChain(links, wanted, o.asOfHt);
  // Everything is checked before anything is created.
  for (const t of entries) await verifyParts(plan.full.dir, t);
  for (const l of plan.increments) for (const n of wanted) await verifyParts(l.dir, l.m.tables.find((x) => x.name === n)!);
  return { plan, entries };
}

export interface ImportResult {
  table: string;
  rows: number;
  /** The restore point (decimal hybrid time). */
  asOfHt: string;
  /** Checked against a manifest's digest (false: a point between two cuts, which no digest describes). */
  verified: boolean;
}

/** Import tables of an export (or a chain) into new tables; each is checked against a digest before it gets its name. */
export async function importTables(client: TesseraClient, o: ImportOptions): Promise<ImportResult[]> {
  const { plan, entries } = await planImport(o);
  const existing = new Set((await client.listTables()).map((t) => t.name));
  for (const t of entries) {
    const target = o.into ?? t.name;
    if (existing.has(target)) throw new DbError(ErrorCode.ALREADY_EXISTS, `import: table ${target} exists (import into a new name with --into)`);
  }
  const out: ImportResult[] = [];
  for (const t of entries) {
    const target = o.into ?? t.name;
    const hidden = `${target}__importing_${randomBytes(4).toString('hex')}`;
    await client.createTable({ name: hidden, columns: t.columns, primaryKey: t.primaryKey, numTablets: t.numTablets, ...(t.durability === 'ASYNC' || t.durability === 'FLUSH' || t.durability === 'FSYNC' ? { durability: t.durability } : {}) });
    try {
      o.progress?.(`import ${t.name}: loading ${t.rows} rows into ${hidden}`);
      await loadTable(client, plan.full.dir, t, hidden, o.progress);
      for (const l of plan.increments) await applyIncrement(client, l.dir, l.m.tables.find((x) => x.name === t.name)!, hidden, l.uptoHt, o.progress);
      const got = await tableDigest(client, hidden);
      const want = plan.verifyWith?.m.tables.find((x) => x.name === t.name);
      if (want && (got.rows !== want.rows || got.digest !== want.digest)) throw new DbError(ErrorCode.CORRUPTION, `import ${t.name}: the loaded table holds ${got.rows} rows with digest ${got.digest.slice(0, 12)}…, the export (${plan.verifyWith!.dir}) ${want.rows} with ${want.digest.slice(0, 12)}…`);
      await client.alterTable(hidden, { renameTo: target });
      o.progress?.(`import ${t.name}: ${got.rows} rows in ${target} as of ${plan.targetHt}${want ? ', digest checked' : ' (between two cuts: no digest to check)'}`);
      out.push({ table: target, rows: got.rows, asOfHt: plan.targetHt.toString(), verified: want !== undefined });
    } catch (e) {
      await client.dropTable(hidden, { ifExists: true }).catch(() => undefined);
      throw e;
    }
  }
  return out;
}
