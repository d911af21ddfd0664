/**
 * HBase's cell model at the terminal (docs/cells.md):
 *   tessera put-cells t id=1 --cell v=a@1733480000000 --cell v=b --ttl_ms 5000
 *   tessera delete-cells t id=1 --version v@1733480000000 --column w --family cf1 --row
 *   tessera get t id=1 --versions 3 --as_of 2026-12-06T13:00:00Z --time_range A,B --raw --families cf1
 * Times: a hybrid time (17 digits or more), a wall-clock time in ms (fewer digits), or an ISO date.
 */
import type { Command } from 'commander';
import { htToJson } from '../common/hybrid-time';
import type { CellDelete, CellPut, CellTime } from '../client/cells';
import type { Row } from '../client/client-types';
import type { TesseraClient } from '../client/tessera-client';
import { print, printJson, withClient } from './cli-io';
import { bad, parseCellTime } from './cell-get';
import { common, parseRow, parseValue, timeout, type CommonOpts } from './data-commands';

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

/** `col=value[@time]`. */
async function parsePuts(c: TesseraClient, table: string, specs: string[], ttlMs: number | undefined): Promise<CellPut[]> {
  const loc = await c.tableLocations(table);
  return specs.map((s) => {
    const eq = s.indexOf('=');
    if (eq <= 0) throw bad(`--cell '${s}' must look like column=value or column=value@time`, 'CELL');
    const column = s.slice(0, eq);
    let text = s.slice(eq + 1);
    let timestamp: CellTime | undefined;
    const at = text.lastIndexOf('@');
    if (at >= 0) {
      timestamp = parseCellTime(text.slice(at + 1), 'TIMESTAMP');
      text = text.slice(0, at);
    }
    const value = parseValue(loc.schema, column, text);
    if (value === null) throw bad(`--cell ${column}=null: delete a cell with delete-cells`, 'VALUE');
    return { column, value, ...(timestamp !== undefined ? { timestamp } : {}), ...(ttlMs !== undefined ? { ttlMs } : {}) };
  });
}

function parseDeletes(o: { version?: string[]; column?: string[]; family?: string[]; row?: boolean; at?: string }): CellDelete[] {
  const at = o.at !== undefined ? { timestamp: parseCellTime(o.at, 'TIMESTAMP') } : {};
  const out: CellDelete[] = [];
  for (const v of o.version ?? []) {
    const i = v.lastIndexOf('@');
    if (i <= 0) throw bad(`--version '${v}' must look like column@time`, 'VERSION');
    out.push({ type: 'version', column: v.slice(0, i), timestamp: parseCellTime(v.slice(i + 1), 'TIMESTAMP') });
  }
  for (const col of o.column ?? []) out.push({ type: 'column', column: col, ...at });
  for (const f of o.family ?? []) out.push({ type: 'family', family: f, ...at });
  if (o.row) out.push({ type: 'row', ...at });
  if (out.length === 0) throw bad('delete-cells needs --version, --column, --family or --row', 'DELETE');
  return out;
}

export function registerCellCommands(program: Command): void {
  common(program.command('put-cells <table> <key...>').description('put cells of one row, each at its own timestamp when given (HBase Put; docs/cells.md): --cell col=value[@time] ...'))
    .requiredOption('--cell <col=value[@time]>', 'a cell to put (repeatable); time: hybrid time, wall ms or ISO date', collect)
    .option('--ttl_ms <ms>', 'TTL of these cells')
    .action(async (table: string, key: string[], o: CommonOpts & { cell: string[]; ttl_ms?: string }) => {
      const ttl = o.ttl_ms !== undefined ? Number(o.ttl_ms) : undefined;
      if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl <= 0)) throw bad(`--ttl_ms ${o.ttl_ms} must be a positive integer`, 'TTL');
      const ht = await withClient(o, timeout(o), async (c) => c.table(table).putCells(await parseRow(c, table, key), await parsePuts(c, table, o.cell, ttl)));
      if (o.json) printJson({ writeHt: ht.toString() });
      else print(`OK at ${ht} (${htToJson(ht).iso})`);
    });

  common(program.command('delete-cells <table> <key...>').description('write delete markers (HBase Delete): --version col@time, --column col, --family cf, --row; --at TIME for the markers without one'))
    .option('--version <col@time>', 'the version of a column at exactly this time (repeatable)', collect)
    .option('--column <col>', 'every version of a column at or before --at (repeatable)', collect)
    .option('--family <name>', 'every version of every column of a family at or before --at (repeatable)', collect)
    .option('--row', 'every version of every column of the row at or before --at')
    .option('--at <time>', 'the markers\' timestamp (default: the write\'s time)')
    .action(async (table: string, key: string[], o: CommonOpts & { version?: string[]; column?: string[]; family?: string[]; row?: boolean; at?: string }) => {
      const deletes = parseDeletes(o);
      const ht = await withClient(o, timeout(o), async (c) => c.table(table).deleteCells(await parseRow(c, table, key) as Row, deletes));
      if (o.json) printJson({ writeHt: ht.toString() });
      else print(`OK at ${ht} (${htToJson(ht).iso})`);
    });
}
