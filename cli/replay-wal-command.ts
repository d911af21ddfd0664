/**
 * `tessera admin replay-wal --from DIR --table T [--into NAME] [--since TIME] [--until TIME]`
 * (docs/backup.md; HBase's WALPlayer): re-apply the writes of T's WAL archive (tserver
 * --log_archive_dir) to a table through the client, in each tablet's log order, with hybrid times
 * in (since, until]. Rows are written as upserts of the columns each write named, and deletes;
 * consecutive writes of distinct rows go in one batch, and a row seen again starts a new batch, so a
 * row's writes land in their order.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readManifest } from '../client/backup/backup-format';
import type { Command } from 'commander';
import type { Row } from '../client/client-types';
import type { TesseraClient } from '../client/tessera-client';
import { DbError, ErrorCode } from '../common/errors';
import { parseTimePoint } from '../common/hybrid-time';
import { emptyReplayStats, readTableArchive, type ReplayStats, type ReplayWrite } from '../tserver/wal-archive-reader';
import { print, printJson } from './cli-io';

/** A time, or the directory of an export (its cut): what --since takes. */
export function timeOrExportCut(v: string, what: string): bigint {
  if (fs.existsSync(v) && fs.statSync(v).isDirectory()) return BigInt(readManifest(v).cutHt);
  return parseTimePoint(v, what);
}

/** Writes per batch (one upsertMany or deleteMany). */
const REPLAY_BATCH_ROWS = 500;

export interface ReplayOptions {
  from: string;
  table: string;
  into: string;
  sinceHt?: bigint;
  untilHt?: bigint;
  progress?: (line: string) => void;
}

export async function replayWal(client: TesseraClient, o: ReplayOptions): Promise<ReplayStats & { replayed: number; skippedOutsideWindow: number; lastHt: string }> {
  if (!(await client.listTables()).some((t) => t.name === o.into)) throw new DbError(ErrorCode.NOT_FOUND, `replay-wal: table ${o.into} does not exist (replay goes into an existing table: restore or import it first)`);
  const { schema } = await client.tableLocations(o.into);
  const keyNames = [...schema.hash, ...schema.range].map((c) => c.name);
  const stats = emptyReplayStats();
  const table = client.table(o.into);
  let batch: ReplayWrite[] = [];
  const keys = new Set<string>();
  let replayed = 0;
  let skipped = 0;
  let lastHt = 0n;
  const keyOf = (w: ReplayWrite): string => JSON.stringify(keyNames.map((k) => String(w.row[k])));
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const rows = batch.map((w) => w.row as Row);
    if (batch[0]!.type === 'upsert') await table.upsertMany(rows, { timeoutMs: 600_000 });
    else await table.deleteMany(rows.map((r) => Object.fromEntries(keyNames.map((k) => [k, r[k] ?? null]))), { timeoutMs: 600_000 });
    replayed += batch.length;
    batch = [];
    keys.clear();
    if (replayed % 100_000 < REPLAY_BATCH_ROWS) o.progress?.(`replay-wal ${o.table}: ${replayed} writes`);
  };
  for (const w of readTableArchive(o.from, o.table, stats)) {
    if ((o.sinceHt !== undefined && w.ht <= o.sinceHt) || (o.untilHt !== undefined && w.ht > o.untilHt)) {
      skipped++;
      continue;
    }
    const k = keyOf(w);
    if (batch.length >= REPLAY_BATCH_ROWS || keys.has(k) || (batch.length > 0 && batch[0]!.type !== w.type)) await flush();
    batch.push(w);
    keys.add(k);
    if (w.ht > lastHt) lastHt = w.ht;
  }
  await flush();
  return { ...stats, replayed, skippedOutsideWindow: skipped, lastHt: lastHt.toString() };
}

export function registerReplayWal(admin: Command, run: <T>(cmd: Command, f: (c: TesseraClient) => Promise<T>) => Promise<T>, json: (cmd: Command) => boolean): void {
  admin
    .command('replay-wal')
    .description('re-apply the writes of a table\'s WAL archive (tserver --log_archive_dir) to a table, in log order: recovery past the last export')
    .requiredOption('--from <dir>', 'the archive directory (the tservers\' --log_archive_dir)')
    .requiredOption('--table <name>', 'the archived table')
    .option('--into <name>', 'the table written (default: --table); it must exist')
    .option('--since <time|dir>', 'only writes after this time: e.g. the cut of the export restored, or its directory')
    .option('--until <time>', 'only writes at or before this time')
    .action(async (o: { from: string; table: string; into?: string; since?: string; until?: string }, cmd: Command) => {
      const sinceHt = o.since !== undefined ? timeOrExportCut(o.since, '--since') : undefined;
      const untilHt = o.until !== undefined ? parseTimePoint(o.until, '--until') : undefined;
      const progress = (l: string): void => void process.stderr.write(`${l}\n`);
      const r = await run(cmd, (c) => replayWal(c, { from: path.resolve(o.from), table: o.table, into: o.into ?? o.table, progress, ...(sinceHt !== undefined ? { sinceHt } : {}), ...(untilHt !== undefined ? { untilHt } : {}) }));
      if (json(cmd)) printJson(r);
      else print(`replayed ${r.replayed} writes of ${o.table} into ${o.into ?? o.table} (last at hybrid time ${r.lastHt}; ${r.tablets} tablet(s), ${r.entries} log entries, ${r.txnWrites} transactional writes, ${r.skippedOutsideWindow} outside the window, ${r.cellOpsSkipped} cell ops not replayed, ${r.txnsUnfinished} transactions without their apply)`);
    });
}
