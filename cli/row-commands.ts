/**
 * Atomic row operations and row locks at the terminal (docs/rows.md):
 *   tessera increment t id=1 --column n --by 5
 *   tessera append t id=1 --column s --value x
 *   tessera check-and-put t id=1 --if 'n=5' --set 'a=1,b=2'   (conditions: c=v c!=v c<v c>v c:exists c:absent)
 *   tessera lock-row t id=1 [--lease_ms N]  /  tessera unlock-row t id=1 --lock_id ID
 * Values are written as in `tessera upsert` (by the column's type); writes may carry a lock with
 * --lock_id ID --lock_token N.
 */
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import type { Row } from '../client/client-types';
import type { RowCheck, RowLock, RowOpOptions } from '../client/row-ops';
import type { TableSchema } from '../client/table-schema';
import { common, parseRow, parseValue, timeout, type CommonOpts } from './data-commands';
import { print, printJson, withClient } from './cli-io';

interface LockOpts {
  lock_id?: string;
  lock_token?: string;
  wait?: boolean;
}

function withLockOptions(c: Command): Command {
  return c.option('--lock_id <id>', 'the row lock this write carries (lock-row prints it)').option('--lock_token <n>', 'the lock\'s fencing token (with --lock_id)').option('--wait', 'wait (up to the deadline) for a row another holder locked, instead of failing ROW_LOCKED');
}

function rowOpOptions(table: string, key: Row, o: CommonOpts & LockOpts): RowOpOptions {
  const out: RowOpOptions = {};
  const t = timeout(o);
  if (t) out.timeoutMs = t;
  if (o.wait) out.waitForLocks = true;
  if (o.lock_id) {
    if (!o.lock_token || !/^\d+$/.test(o.lock_token)) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--lock_id needs --lock_token N (the fencing token lock-row printed)');
    const lock: RowLock = { table, key, lockId: o.lock_id, token: BigInt(o.lock_token), expiresHt: 0n, leaseMs: 0 };
    out.lock = lock;
  }
  return out;
}

/** `c=v`, `c!=v`, `c<v`, `c>v`, `c:exists`, `c:absent`. */
export function parseCheck(schema: TableSchema, text: string): RowCheck {
  const presence = /^([^:=<>!]+):(exists|absent)$/.exec(text);
  if (presence) return { column: presence[1]!, op: presence[2] === 'exists' ? 'EXISTS' : 'ABSENT' };
  const m = /^([^:=<>!]+)(!=|=|<|>)(.*)$/.exec(text);
  if (!m) throw new DbError(ErrorCode.INVALID_ARGUMENT, `condition '${text}' must look like col=value, col!=value, col<value, col>value, col:exists or col:absent`);
  const op = m[2] === '=' ? 'EQ' : m[2] === '!=' ? 'NE' : m[2] === '<' ? 'LT' : 'GT';
  return { column: m[1]!, op, value: parseValue(schema, m[1]!, m[3]!) };
}

function printValues(values: Row, json: boolean, extra: Record<string, unknown> = {}): void {
  if (json) return printJson({ ...extra, values });
  for (const [k, v] of Object.entries(values)) print(`${k} = ${v instanceof Uint8Array ? `0x${Buffer.from(v).toString('hex')}` : String(v)}`);
}

export function registerRowCommands(program: Command): void {
  withLockOptions(common(program.command('increment <table> <key...>').description('add to an int64 column of one row atomically (absent counts as 0); prints the new value')))
    .requiredOption('--column <name>', 'int64 column')
    .option('--by <n>', 'amount (may be negative)', '1')
    .action(async (table: string, key: string[], o: CommonOpts & LockOpts & { column: string; by: string }) => {
      if (!/^-?\d+$/.test(o.by)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--by must be an integer, got '${o.by}'`);
      const values = await withClient(o, timeout(o), async (c) => {
        const k = await parseRow(c, table, key);
        return c.table(table).increment(k, { [o.column]: BigInt(o.by) }, rowOpOptions(table, k, o));
      });
      printValues(values, o.json ?? false);
    });

  withLockOptions(common(program.command('append <table> <key...>').description('append to a string or bytes column of one row atomically; prints the new value')))
    .requiredOption('--column <name>', 'string or bytes column')
    .requiredOption('--value <v>', 'what to append (bytes as 0x-hex)')
    .action(async (table: string, key: string[], o: CommonOpts & LockOpts & { column: string; value: string }) => {
      const values = await withClient(o, timeout(o), async (c) => {
        const k = await parseRow(c, table, key);
        const v = parseValue((await c.tableLocations(table)).schema, o.column, o.value);
        if (typeof v !== 'string' && !(v instanceof Uint8Array)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `append: column ${o.column} is not string or bytes`);
        return c.table(table).append(k, { [o.column]: v }, rowOpOptions(table, k, o));
      });
      printValues(values, o.json ?? false);
    });

  withLockOptions(common(program.command('check-and-put <table> <key...>').description("set columns of one row only if every --if holds, atomically: --if 'n=5' --set 'a=1,b=2'; prints applied / not applied")))
    .option('--if <cond>', 'col=value | col!=value | col<value | col>value | col:exists | col:absent (repeatable: all must hold)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--set <pairs>', 'col=value,... to write (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--delete_columns <cols>', 'columns to delete (comma list)')
    .option('--delete_row', 'delete the row (before --set)')
    .action(async (table: string, key: string[], o: CommonOpts & LockOpts & { if: string[]; set: string[]; delete_columns?: string; delete_row?: boolean }) => {
      if (o.if.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'check-and-put needs at least one --if');
      const applied = await withClient(o, timeout(o), async (c) => {
        const k = await parseRow(c, table, key);
        const schema = (await c.tableLocations(table)).schema;
        const put = await parseRow(c, table, o.set.flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean));
        const deleteColumns = (o.delete_columns ?? '').split(',').map((s) => s.trim()).filter(Boolean);
        return c.table(table).checkAndMutate(k, o.if.map((x) => parseCheck(schema, x)), { put, deleteColumns, deleteRow: o.delete_row === true }, rowOpOptions(table, k, o));
      });
      if (o.json) printJson({ applied });
      else print(applied ? 'applied' : 'not applied (a condition did not hold)');
    });

  common(program.command('lock-row <table> <key...>').description('lock one row with a lease; prints the lock id and fencing token (writes carry them with --lock_id/--lock_token)'))
    .option('--lease_ms <ms>', 'lease (default: the tserver\'s row_lock_lease_ms)')
    .option('--wait', 'wait (up to the deadline) while another holder has it')
    .action(async (table: string, key: string[], o: CommonOpts & { lease_ms?: string; wait?: boolean }) => {
      const lock = await withClient(o, timeout(o), async (c) => c.table(table).lockRow(await parseRow(c, table, key), { ...(o.lease_ms ? { leaseMs: Number(o.lease_ms) } : {}), wait: o.wait === true }));
      if (o.json) printJson({ lockId: lock.lockId, token: lock.token, leaseMs: lock.leaseMs, expiresHt: lock.expiresHt });
      else print(`lock_id ${lock.lockId} token ${lock.token} lease ${lock.leaseMs} ms`);
    });

  common(program.command('unlock-row <table> <key...>').description('release a row lock (ROW_LOCK_NOT_HELD for a wrong id or an ended lease)'))
    .requiredOption('--lock_id <id>', 'the id lock-row printed')
    .action(async (table: string, key: string[], o: CommonOpts & { lock_id: string }) => {
      await withClient(o, timeout(o), async (c) => {
        const k = await parseRow(c, table, key);
        await c.table(table).unlockRow({ table, key: k, lockId: o.lock_id, token: 0n, expiresHt: 0n, leaseMs: 0 });
      });
      if (o.json) printJson({ ok: true });
      else print('unlocked');
    });
}
