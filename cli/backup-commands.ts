/**
 * `tessera admin export` and `tessera admin import` (docs/backup.md): a consistent export of tables
 * at one snapshot into a directory of checksummed part files, and an import into new tables checked
 * against the export's digests. Progress lines go to stderr; the result to stdout.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { exportTables, importTables } from '../client/backup/export-import';
import type { TesseraClient } from '../client/tessera-client';
import { DbError, ErrorCode } from '../common/errors';
import { parseTimePoint } from '../common/hybrid-time';
import { print, printJson } from './cli-io';

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function list(v: string | undefined, what: string): string[] | undefined {
  if (v === undefined) return undefined;
  const names = v.split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} names no table`);
  return names;
}

export function registerBackupCommands(admin: Command, run: <T>(cmd: Command, f: (c: TesseraClient) => Promise<T>) => Promise<T>, json: (cmd: Command) => boolean): void {
  admin
    .command('export')
    .description('write tables as of one snapshot (a consistent cut across tables and tablets) into a new directory of checksummed part files and a manifest')
    .requiredOption('--tables <list>', 'comma-separated table names')
    .requiredOption('--to <dir>', 'a new (or empty) directory')
    .option('--as_of <time>', 'the cut: a past hybrid time (decimal), ms since the epoch or an ISO 8601 time, within history retention (default: now)')
    .action(async (o: { tables: string; to: string; as_of?: string }, cmd: Command) => {
      const asOfHt = o.as_of !== undefined ? parseTimePoint(o.as_of, '--as_of') : undefined;
      const m = await run(cmd, (c) => exportTables(c, { tables: list(o.tables, '--tables')!, to: path.resolve(o.to), progress, ...(asOfHt !== undefined ? { asOfHt } : {}) }));
      if (json(cmd)) printJson(m);
      else print(`exported ${m.tables.map((t) => `${t.name} (${t.rows} rows)`).join(', ')} at hybrid time ${m.cutHt} (${m.cutTime}) into ${o.to}`);
    });
  admin
    .command('import')
    .description('load the tables of an export into new tables; every part is checked before anything is created, and each table is checked against its digest before it gets its name')
    .requiredOption('--from <dir>', 'an export directory')
    .option('--tables <list>', 'only these tables of the export')
    .option('--into <name>', 'the new table\'s name (one table)')
    .action(async (o: { from: string; tables?: string; into?: string }, cmd: Command) => {
      const tables = list(o.tables, '--tables');
      const r = await run(cmd, (c) => importTables(c, { from: path.resolve(o.from), ...(tables ? { tables } : {}), ...(o.into ? { into: o.into } : {}), progress }));
      if (json(cmd)) printJson({ imported: r });
      else print(`imported ${r.map((t) => `${t.table} (${t.rows} rows)`).join(', ')}`);
    });
}
