/**
 * `tessera admin export` (docs/backup.md): full and incremental exports, resumable.
 *
 * A full export reads every listed table at one hybrid time with no uncertainty window — one snapshot
 * for all tables and tablets, so no transaction is half in — and streams the rows to part files.
 * An incremental export (`sinceHt`) writes, per table, every put and every delete marker with a
 * timestamp in (since, cut] (a raw cell scan at the cut: HBase's Export with a time range), plus the
 * digest of the table as of its cut, which an import of the chain must reproduce.
 *
 * Resume: `export-state.json` records the cut, the window and each table once its parts are written
 * and fsynced. `resume` reads it back, keeps the finished tables whose parts still check (size and
 * sha256), and redoes the others at the same cut. The manifest is written last; the state file goes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { htToJson } from '../../common/hybrid-time';
import type { ColumnType } from '../client-types';
import type { TesseraClient } from '../tessera-client';
import { EXPORT_FORMAT, EXPORT_FORMAT_VERSION, MANIFEST_FILE, RowDigest, verifyParts, type ExportKind, type Manifest, type TableEntry } from './backup-format';
import { encodeChangedRow } from './increment-lines';
import { PartWriter } from './part-writer';
import { scanLinesAhead } from './tablet-scan-ahead';

export const EXPORT_STATE_FILE = 'export-state.json';
/** Deadline of a whole table's scan or load (a large table takes minutes). */
export const TABLE_TIMEOUT_MS = 3_600_000;
/** Rows per scan RPC of an export or a digest (the client's largest page: fewer round trips). */
export const SCAN_PAGE_ROWS = 10_000;

export interface BackupProgress {
  (line: string): void;
}

export interface ExportOptions {
  tables: string[];
  to: string;
  /** The cut: a past hybrid time (within history retention); default now. */
  asOfHt?: bigint;
  /** An incremental export of (sinceHt, cut]: sinceHt is the cut of the export it follows. */
  sinceHt?: bigint;
  /** Carry on an interrupted export in `to` (same tables, same cut). */
  resume?: boolean;
  /** Stops the export between pages (what an interrupted export looks like to a test). */
  signal?: AbortSignal;
  progress?: BackupProgress;
  /** Report every this many rows (default 100,000). */
  progressEveryRows?: number;
}

interface ExportState {
  format: typeof EXPORT_FORMAT;
  kind: ExportKind;
  cutHt: string;
  sinceHt?: string;
  tables: string[];
  done: TableEntry[];
}

type TableBase = Omit<TableEntry, 'rows' | 'digest' | 'parts'>;

async function tableEntryBase(client: TesseraClient, name: string): Promise<TableBase> {
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

function writeJsonAtomic(file: string, v: unknown): void {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(v, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

function checkAbort(o: ExportOptions): void {
  if (o.signal?.aborted) throw new DbError(ErrorCode.SHUTTING_DOWN, 'export interrupted: run it again with --resume to carry on at the same cut');
}

/** The table's rows at the cut into part files; answers its entry's counts. */
async function exportFull(client: TesseraClient, base: TableBase, cutHt: bigint, o: ExportOptions): Promise<Pick<TableEntry, 'rows' | 'digest' | 'parts'>> {
  const w = new PartWriter(o.to, base.name, 'part');
  const every = o.progressEveryRows ?? 100_000;
  try {
    let reported = 0;
    // The tablet servers write the lines (ScanRequestPB.row_format): the bytes go to the part as they come.
    for await (const page of scanLinesAhead(client, base.name, { readHt: cutHt, timeoutMs: TABLE_TIMEOUT_MS, pageSize: SCAN_PAGE_ROWS })) {
      w.startTablet(page.tablet);
      w.addLines(page.lines, page.rows);
      if (w.lines - reported >= every) {
        reported = w.lines - (w.lines % every);
        o.progress?.(`export ${base.name}: ${reported} rows`);
        checkAbort(o);
      }
    }
  } catch (e) {
    w.abandon();
    throw e;
  }
  const parts = w.finish();
  return { rows: w.lines, digest: w.digest.hex(), parts };
}

/** Refuse a window that starts below a tablet's history floor: its versions and markers may be collected. */
async function checkHistory(client: TesseraClient, table: string, sinceHt: bigint): Promise<void> {
  try {
    for await (const page of client.table(table).scanCellPages({ asOf: sinceHt, pageRows: 1, pagesPerTabletMax: 1, timeoutMs: TABLE_TIMEOUT_MS })) void page;
  } catch (e) {
    if (e instanceof DbError && e.code === ErrorCode.SNAPSHOT_TOO_OLD) throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, `export ${table}: --since ${sinceHt} is older than the table's retained history (timestamp_history_retention_interval_sec): versions and deletes of the window may be gone; take a full export instead`, e.details);
    throw e;
  }
}

/** Every version and delete marker of (since, cut] into cell part files, and the table's digest at the cut. */
async function exportWindow(client: TesseraClient, base: TableBase, sinceHt: bigint, cutHt: bigint, o: ExportOptions): Promise<Pick<TableEntry, 'rows' | 'digest' | 'parts' | 'changedRows'>> {
  await checkHistory(client, base.name, sinceHt);
  // The table at the cut, read through the intents (a row read), first: by the time the raw cell
  // scan (RegularDB only) runs, transactions committed below the cut have had time to be applied; the
  // import checks the chain's result against this digest, so a cell the scan missed is caught there.
  const d = new RowDigest();
  for await (const page of scanLinesAhead(client, base.name, { readHt: cutHt, timeoutMs: TABLE_TIMEOUT_MS, pageSize: SCAN_PAGE_ROWS })) d.addLines(page.lines, page.rows);
  checkAbort(o);
  const w = new PartWriter(o.to, base.name, 'cells');
  try {
    for await (const page of client.table(base.name).scanCellPages({ raw: true, asOf: cutHt, timeRange: [sinceHt + 1n, cutHt + 1n], timeoutMs: TABLE_TIMEOUT_MS })) {
      for (const r of page) w.add(encodeChangedRow(r));
      checkAbort(o);
    }
  } catch (e) {
    w.abandon();
    throw e;
  }
  const parts = w.finish();
  // Collected during the scan? Then the window may have lost markers: refuse rather than hand out a hole.
  await checkHistory(client, base.name, sinceHt);
  return { rows: d.rows, digest: d.hex(), changedRows: w.lines, parts };
}

async function startState(client: TesseraClient, o: ExportOptions): Promise<ExportState> {
  if (fs.existsSync(o.to) && fs.readdirSync(o.to).length > 0) throw new DbError(ErrorCode.ALREADY_EXISTS, `export: ${o.to} is not empty (an export goes into a new directory; --resume carries on an interrupted one)`);
  fs.mkdirSync(o.to, { recursive: true });
  // The cut: a hybrid time from the cluster (a transaction's read time, then the transaction is
  // dropped). Every table is read at exactly that time with no uncertainty window, so all tablets
  // show one snapshot: a transaction still pending there commits above it (docs/transactions.md).
  const probe = await client.beginTransaction();
  const nowHt = probe.readHt;
  await probe.abort().catch(() => undefined);
  if (o.asOfHt !== undefined && o.asOfHt > nowHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export: --as_of ${htToJson(o.asOfHt).iso} is in the future (the cluster's time is ${htToJson(nowHt).iso})`);
  const cutHt = o.asOfHt ?? nowHt;
  if (o.sinceHt !== undefined && o.sinceHt >= cutHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export: --since ${o.sinceHt} is not before the cut ${cutHt}`, { part: 'SINCE' });
  const s: ExportState = { format: EXPORT_FORMAT, kind: o.sinceHt !== undefined ? 'incremental' : 'full', cutHt: cutHt.toString(), ...(o.sinceHt !== undefined ? { sinceHt: o.sinceHt.toString() } : {}), tables: o.tables, done: [] };
  writeJsonAtomic(path.join(o.to, EXPORT_STATE_FILE), s);
  return s;
}

async function resumeState(o: ExportOptions): Promise<ExportState> {
  if (fs.existsSync(path.join(o.to, MANIFEST_FILE))) throw new DbError(ErrorCode.ALREADY_EXISTS, `export: ${o.to} holds a finished export (it has ${MANIFEST_FILE}): nothing to resume`);
  const file = path.join(o.to, EXPORT_STATE_FILE);
  if (!fs.existsSync(file)) throw new DbError(ErrorCode.NOT_FOUND, `export: ${o.to} has no ${EXPORT_STATE_FILE}: no interrupted export to resume there`);
  let s: ExportState;
  try {
    s = JSON.parse(fs.readFileSync(file, 'utf8')) as ExportState;
  } catch (e) {
    throw new DbError(ErrorCode.CORRUPTION, `${file} is not JSON: ${(e as Error).message}`);
  }
  if (s?.format !== EXPORT_FORMAT || !Array.isArray(s.tables) || !Array.isArray(s.done) || !/^\d+$/.test(String(s.cutHt))) throw new DbError(ErrorCode.CORRUPTION, `${file}: not an export state`);
  const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  if (o.tables.length > 0 && !same(o.tables, s.tables)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export --resume: the interrupted export is of ${s.tables.join(',')}, not ${o.tables.join(',')}`);
  if (o.asOfHt !== undefined && o.asOfHt.toString() !== s.cutHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export --resume: the interrupted export's cut is ${s.cutHt}, not ${o.asOfHt}`);
  if (o.sinceHt !== undefined && o.sinceHt.toString() !== s.sinceHt) throw new DbError(ErrorCode.INVALID_ARGUMENT, `export --resume: the interrupted export's window starts at ${s.sinceHt ?? '(full export)'}, not ${o.sinceHt}`);
  const kept: TableEntry[] = [];
  for (const t of s.done) {
    try {
      await verifyParts(o.to, t);
      kept.push(t);
    } catch (e) {
      o.progress?.(`export --resume: ${t.name} is redone (${(e as Error).message})`);
    }
  }
  o.progress?.(`export --resume: cut ${s.cutHt}; kept ${kept.map((t) => t.name).join(', ') || 'no table'}`);
  return { ...s, done: kept };
}

/** Export `tables` as of one snapshot (or their changes since an earlier cut) into `to`. */
export async function exportTables(client: TesseraClient, o: ExportOptions): Promise<Manifest> {
  if (!o.resume && o.tables.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'export: name at least one table (--tables a,b)');
  if (new Set(o.tables).size !== o.tables.length) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'export: a table is named twice');
  const s = o.resume ? await resumeState(o) : await startState(client, o);
  const cutHt = BigInt(s.cutHt);
  const sinceHt = s.sinceHt !== undefined ? BigInt(s.sinceHt) : undefined;
  o.progress?.(`export: ${s.tables.length} table(s) at hybrid time ${cutHt}${sinceHt !== undefined ? `, changes since ${sinceHt}` : ''}`);
  const bases = await Promise.all(s.tables.map((t) => tableEntryBase(client, t)));
  for (const b of bases) {
    if (s.done.some((t) => t.name === b.name)) continue;
    // Whatever an interrupted run left of this table goes; it is written again at the same cut.
    fs.rmSync(path.join(o.to, b.name), { recursive: true, force: true });
    checkAbort(o);
    const r = sinceHt !== undefined ? await exportWindow(client, b, sinceHt, cutHt, o) : await exportFull(client, b, cutHt, o);
    s.done.push({ ...b, ...r });
    writeJsonAtomic(path.join(o.to, EXPORT_STATE_FILE), s);
    o.progress?.(`export ${b.name}: ${r.rows} rows${'changedRows' in r ? `, ${r.changedRows} changed` : ''} in ${r.parts.length} part(s)`);
  }
  const tables = s.tables.map((n) => s.done.find((t) => t.name === n)!);
  const m: Manifest = { format: EXPORT_FORMAT, version: EXPORT_FORMAT_VERSION, kind: s.kind, ...(s.sinceHt !== undefined ? { sinceHt: s.sinceHt } : {}), cutHt: s.cutHt, cutTime: htToJson(cutHt).iso, tables };
  // The manifest last, whole or not at all: an export without one is incomplete.
  writeJsonAtomic(path.join(o.to, MANIFEST_FILE), m);
  fs.rmSync(path.join(o.to, EXPORT_STATE_FILE), { force: true });
  return m;
}
