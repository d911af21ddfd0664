/**
 * `tessera admin export` and `tessera admin import` (docs/backup.md): a consistent export of tables
 * at one snapshot (or of their changes since an earlier export) into a directory of checksummed part
 * files, resumable; and an import of an export or a chain (full + increments) into new tables checked
 * against the export's digests. Progress lines go to stderr; the result to stdout.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { exportTables, importTables } from '../client/backup/export-import';
import { restoreTable } from '../client/backup/restore-table';
import type { TesseraClient } from '../client/tessera-client';
import { DbError, ErrorCode } from '../common/errors';
import { parseTimePoint } from '../common/hybrid-time';
import { print, printJson } from './cli-io';
import { registerReplayWal, timeOrExportCut } from './replay-wal-command';

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function list(v: string | undefined, what: string): string[] | undefined {
  if (v === undefined) return undefined;
  const names = v.split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} names no table`);
  return names;
}

function cutOf(o: { as_of?: string; until?: string }): bigint | undefined {
  if (o.as_of !== undefined && o.until !== undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--as_of and --until both name the cut: give one');
  const v = o.as_of ?? o.until;
  return v !== undefined ? parseTimePoint(v, o.as_of !== undefined ? '--as_of' : '--until') : undefined;
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

export function registerBackupCommands(admin: Command, run: <T>(cmd: Command, f: (c: TesseraClient) => Promise<T>) => Promise<T>, json: (cmd: Command) => boolean): void {
  admin
    .command('export')
    .description('write tables as of one snapshot (a consistent cut across tables and tablets), or every version and delete since an earlier export (--since), into a new directory of checksummed part files and a manifest')
    .option('--tables <list>', 'comma-separated table names (required unless --resume)')
    .requiredOption('--to <dir>', 'a new (or empty) directory; with --resume, the interrupted export\'s')
    .option('--as_of <time>', 'the cut: a past hybrid time (decimal), ms since the epoch or an ISO 8601 time, within history retention (default: now)')
    .option('--since <time|dir>', 'an incremental export of the window (since, cut]: the previous export\'s cut, or its directory')
    .option('--until <time>', 'the cut of an incremental export (as --as_of)')
    .option('--resume', 'carry on an interrupted export in --to at its cut: finished tables whose parts check are kept')
    .action(async (o: { tables?: string; to: string; as_of?: string; since?: string; until?: string; resume?: boolean }, cmd: Command) => {
      const asOfHt = cutOf(o);
      const sinceHt = o.since !== undefined ? timeOrExportCut(o.since, '--since') : undefined;
      const tables = list(o.tables, '--tables') ?? [];
      if (tables.length === 0 && !o.resume) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'export: name the tables (--tables a,b)');
      const ac = new AbortController();
      const onSignal = (): void => ac.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const m = await run(cmd, (c) => exportTables(c, { tables, to: path.resolve(o.to), progress, signal: ac.signal, ...(asOfHt !== undefined ? { asOfHt } : {}), ...(sinceHt !== undefined ? { sinceHt } : {}), ...(o.resume ? { resume: true } : {}) }));
        if (json(cmd)) printJson(m);
        else print(`exported ${m.tables.map((t) => `${t.name} (${t.rows} rows${t.changedRows !== undefined ? `, ${t.changedRows} changed` : ''})`).join(', ')} at hybrid time ${m.cutHt} (${m.cutTime})${m.sinceHt ? `, changes since ${m.sinceHt}` : ''} into ${o.to}`);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
  admin
    .command('import')
    .description('load the tables of an export, or of a chain (a full export then its increments), into new tables; every part is checked before anything is created, and each table against its digest before it gets its name')
    .requiredOption('--from <dir>', 'an export directory; repeat for a chain: --from FULL --from INC1 --from INC2', collect)
    .option('--tables <list>', 'only these tables of the export')
    .option('--into <name>', 'the new table\'s name (one table)')
    .option('--as_of <time>', 'the restore point inside the chain (default: the last export\'s cut)')
    .action(async (o: { from: string[]; tables?: string; into?: string; as_of?: string }, cmd: Command) => {
      const tables = list(o.tables, '--tables');
      const asOfHt = o.as_of !== undefined ? parseTimePoint(o.as_of, '--as_of') : undefined;
      const r = await run(cmd, (c) => importTables(c, { from: o.from.map((d) => path.resolve(d)), ...(tables ? { tables } : {}), ...(o.into ? { into: o.into } : {}), ...(asOfHt !== undefined ? { asOfHt } : {}), progress }));
      if (json(cmd)) printJson({ imported: r });
      else print(`imported ${r.map((t) => `${t.table} (${t.rows} rows)`).join(', ')} as of ${r[0]?.asOfHt ?? '-'}${r.every((t) => t.verified) ? ', digests checked' : ' (a point between two cuts: no digest to check)'}`);
    });
  registerReplayWal(admin, run, json);
  admin
    .command('restore_table <table>')
    .alias('restore-table')
    .description('point-in-time restore inside the cluster: the table as it was at --as_of (within history retention) into a new table, checked against a digest of what was read; the table itself is not touched')
    .requiredOption('--as_of <time>', 'a past hybrid time (decimal), ms since the epoch or an ISO 8601 time, within timestamp_history_retention_interval_sec')
    .option('--into <name>', 'the new table (default: <table>_restored)')
    .action(async (table: string, o: { as_of: string; into?: string }, cmd: Command) => {
      const asOfHt = parseTimePoint(o.as_of, '--as_of');
      const r = await run(cmd, (c) => restoreTable(c, { table, asOfHt, ...(o.into ? { into: o.into } : {}), progress }));
      if (json(cmd)) printJson(r);
      else print(`restored ${table} as of ${r.asOfHt} into ${r.table} (${r.rows} rows, digest checked)`);
    });
}
