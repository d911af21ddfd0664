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

/** Pause between attempts after TRY_AGAIN (transactions with intents on the tablet; another split under way). */
const SPLIT_RETRY_PAUSE_MS = 1000;

/**
 * Split, again after TRY_AGAIN until `retrySeconds` passed (a tablet under a stream of long
 * transactions may need several attempts, docs/splitting.md), saying so on stderr each time.
 */
async function splitWithRetries(c: TesseraClient, tablet: string, point: { splitKey?: Uint8Array; splitHash?: number }, retrySeconds: number): Promise<{ children: string[] }> {
  const until = performance.now() + retrySeconds * 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await c.splitTablet(tablet, point);
    } catch (e) {
      if (!(e instanceof DbError && e.code === ErrorCode.TRY_AGAIN) || performance.now() + SPLIT_RETRY_PAUSE_MS > until) throw e;
      process.stderr.write(`split of ${tablet}: attempt ${attempt} answered TRY_AGAIN (${e.message}); trying again in ${SPLIT_RETRY_PAUSE_MS / 1000} s (until ${retrySeconds} s have passed)\n`);
      await new Promise((r) => setTimeout(r, SPLIT_RETRY_PAUSE_MS));
    }
  }
}

export function registerSplitCommands(admin: Command, run: Run, json: (cmd: Command) => boolean): void {
  admin
    .command('split_tablet <tablet>')
    .description('split a tablet in two (docs/splitting.md): at --at, else at the middle of its data; after TRY_AGAIN it tries again for --retry_seconds')
    .option('--at <key>', "range tables: values of the leading range columns ('100' or 'a/7'); hash tables: a hash code")
    .option('--retry_seconds <n>', 'keep trying this long after TRY_AGAIN (0: once)', '60')
    .action(async (tablet: string, o: { at?: string; retry_seconds: string }, cmd: Command) => {
      const retrySeconds = Number(o.retry_seconds);
      if (!Number.isFinite(retrySeconds) || retrySeconds < 0 || retrySeconds > 3600) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--retry_seconds ${o.retry_seconds}: give 0 to 3600`);
      const r = await run(cmd, async (c) => splitWithRetries(c, tablet, o.at !== undefined ? await splitPointOf(c, tablet, o.at) : {}, retrySeconds));
      if (json(cmd)) printJson({ tablet, children: r.children });
      else print(`tablet ${tablet} split into ${r.children.join(' and ')}`);
    });
}
