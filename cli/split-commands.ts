/**
 * `tessera admin split_tablet TABLET_ID [--at KEY]` (yb-admin's split_tablet; docs/splitting.md).
 * --at: a range table's split point as values of its leading range columns ('100', 'a/7'); a hash
 * table's as a hash code (0-65535). Without it the tablet's leader finds the middle of its data.
 */
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import type { TesseraClient } from '../client/tessera-client';
import { encodeSplitPoints } from '../client/split-points';
import { print, printJson } from './cli-io';

type Run = <T>(cmd: Command, f: (c: TesseraClient) => Promise<T>) => Promise<T>;

async function splitPointOf(c: TesseraClient, tabletId: string, at: string): Promise<{ splitKey?: Uint8Array; splitHash?: number }> {
  for (const t of await c.listTables()) {
    const loc = await c.tableLocations(t.name);
    if (!loc.tablets.some((x) => x.tabletId === tabletId)) continue;
    const s = loc.schema;
    if (s.hash.length > 0) {
      const h = Number(at);
      if (!/^[0-9]{1,5}$/.test(at.trim()) || h > 65535) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--at ${at}: table ${t.name} is hash partitioned: give a hash code 0-65535`);
      return { splitHash: h };
    }
    const [key] = encodeSplitPoints(s.columns.map((col) => ({ name: col.name, type: col.type })), s.range.map((col) => col.name), [at.split('/')]);
    return { splitKey: key! };
  }
  throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${tabletId} not found in any table`);
}

export function registerSplitCommands(admin: Command, run: Run, json: (cmd: Command) => boolean): void {
  admin
    .command('split_tablet <tablet>')
    .description('split a tablet in two (docs/splitting.md): at --at, else at the middle of its data')
    .option('--at <key>', "range tables: values of the leading range columns ('100' or 'a/7'); hash tables: a hash code")
    .action(async (tablet: string, o: { at?: string }, cmd: Command) => {
      const r = await run(cmd, async (c) => c.splitTablet(tablet, o.at !== undefined ? await splitPointOf(c, tablet, o.at) : {}));
      if (json(cmd)) printJson({ tablet, children: r.children });
      else print(`tablet ${tablet} split into ${r.children.join(' and ')}`);
    });
}
