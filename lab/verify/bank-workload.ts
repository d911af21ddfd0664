/**
 * Bank: 8 accounts; transfers read two balances and move money inside a snapshot-isolation (or,
 * with --isolation serializable, serializable) transaction. Reads take the whole table at one
 * snapshot, two ways: inside a transaction ('txn'; serializable: under read locks, and it commits,
 * since only a commit proves the locks held), or as the client's non-transactional scan, which
 * reads every tablet at the first tablet's read time ('snapshot': cheaper — no status-tablet record —
 * and a contract of its own). Every ok read must sum to the initial total with no negative balance
 * (checkBank); the invoke value names the read's mode.
 */
import { DbError } from '../../common/errors';
import type { TesseraClient } from '../../client/tessera-client';
import type { IsolationLevel, Transaction } from '../../client/transaction';
import { checkBank } from './bank-checker';
import type { HistoryOp } from './history';
import { completionOfError, errorText, retryBounded, type OpContext, type Workload, type WorkloadVerdict, waitForTransactionsTable } from './workload';

export const BANK_TABLE = 'verify_bank';
export const BANK_ACCOUNTS = 8;
export const BANK_INITIAL_BALANCE = 100;
const TRANSFER_AMOUNT_MAX = 5;
/** Share of operations that are whole-table reads (the rest are transfers). */
const READ_SHARE = 0.5;
/** Share of reads done as a non-transactional snapshot scan (the rest inside a transaction). */
const SNAPSHOT_READ_SHARE = 0.5;
export type BankReadMode = 'txn' | 'snapshot';

async function abortQuietly(t: Transaction | undefined): Promise<void> {
  if (!t) return;
  await t.abort({ timeoutMs: 1_000 }).catch(() => undefined);
}

export class BankWorkload implements Workload {
  readonly name = 'bank';
  readonly table = BANK_TABLE;
  private readonly accounts = Array.from({ length: BANK_ACCOUNTS }, (_, i) => String(i));

  constructor(private readonly isolation: IsolationLevel = 'snapshot') {}

  async setup(client: TesseraClient): Promise<void> {
    await waitForTransactionsTable(client);
    await client.createTable({ name: BANK_TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
    await retryBounded(() => client.table(BANK_TABLE).upsertMany(this.accounts.map((a) => ({ id: BigInt(a), balance: BigInt(BANK_INITIAL_BALANCE) }))), 10, 500);
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    if (!ctx.rng.chance(READ_SHARE)) return this.transfer(ctx);
    return this.read(ctx, ctx.rng.chance(SNAPSHOT_READ_SHARE) ? 'snapshot' : 'txn');
  }

  private async read(ctx: OpContext, mode: BankReadMode): Promise<'ok' | 'fail' | 'info'> {
    const inv = ctx.recorder.invoke(ctx.process, 'read', { mode });
    let txn: Transaction | undefined;
    try {
      if (mode === 'txn') txn = await ctx.client.beginTransaction({ isolation: this.isolation, timeoutMs: ctx.opTimeoutMs });
      const rows = await (txn ? txn.table(BANK_TABLE) : ctx.client.table(BANK_TABLE)).scan({ timeoutMs: ctx.opTimeoutMs });
      const balances: Record<string, number> = {};
      for (const r of rows) balances[String(r['id'])] = Number(r['balance'] as bigint);
      if (txn && this.isolation === 'serializable') {
        // Serializable reads are locks, and a lock can be broken (a transfer of higher priority aborts
        // the reader) while the scan goes on to the next tablet: only a commit proves they held.
        await txn.commit({ timeoutMs: ctx.opTimeoutMs });
      } else {
        // Read-only at one snapshot: no intents to clean, so the answer need not wait for the abort.
        void abortQuietly(txn);
      }
      ctx.recorder.complete(inv, 'ok', balances);
      return 'ok';
    } catch (e) {
      await abortQuietly(txn);
      ctx.recorder.complete(inv, 'fail', null, errorText(e));
      return 'fail';
    }
  }

  private async transfer(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const from = ctx.rng.int(BANK_ACCOUNTS);
    const to = (from + 1 + ctx.rng.int(BANK_ACCOUNTS - 1)) % BANK_ACCOUNTS;
    const amount = 1 + ctx.rng.int(TRANSFER_AMOUNT_MAX);
    const inv = ctx.recorder.invoke(ctx.process, 'transfer', { from, to, amount });
    let txn: Transaction | undefined;
    let committing = false;
    try {
      txn = await ctx.client.beginTransaction({ isolation: this.isolation, timeoutMs: ctx.opTimeoutMs });
      const t = txn.table(BANK_TABLE);
      // Both balances at once, both updates at once: one transaction, fewer round trips.
      const [a, b] = await Promise.all([t.get({ id: BigInt(from) }, { timeoutMs: ctx.opTimeoutMs }), t.get({ id: BigInt(to) }, { timeoutMs: ctx.opTimeoutMs })]);
      const fa = Number((a?.['balance'] as bigint | undefined) ?? 0n);
      const fb = Number((b?.['balance'] as bigint | undefined) ?? 0n);
      if (!a || !b || fa < amount) {
        await abortQuietly(txn);
        ctx.recorder.complete(inv, 'fail', { from, to, amount }, 'insufficient funds');
        return 'fail';
      }
      await Promise.all([t.update({ id: BigInt(from), balance: BigInt(fa - amount) }, { timeoutMs: ctx.opTimeoutMs }), t.update({ id: BigInt(to), balance: BigInt(fb + amount) }, { timeoutMs: ctx.opTimeoutMs })]);
      committing = true;
      await txn.commit({ timeoutMs: ctx.opTimeoutMs });
      ctx.recorder.complete(inv, 'ok', { from, to, amount });
      return 'ok';
    } catch (e) {
      // Before commit was asked for, nothing of the transaction can become visible.
      const type = committing ? completionOfError(e, false) : 'fail';
      if (!committing) await abortQuietly(txn);
      ctx.recorder.complete(inv, type, { from, to, amount }, errorText(e) + (e instanceof DbError ? '' : ''));
      return type;
    }
  }

  async final(): Promise<void> {
    // Every ok read is checked already.
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkBank(history, { total: BANK_ACCOUNTS * BANK_INITIAL_BALANCE, accounts: this.accounts });
    const anomalies: Record<string, number> = {};
    if (r.wrongTotal.length) anomalies['wrong-total'] = r.wrongTotal.length;
    if (r.negative.length) anomalies['negative-balance'] = r.negative.length;
    if (r.missingAccounts.length) anomalies['missing-accounts'] = r.missingAccounts.length;
    const modeOf = new Map<number, string>();
    const open = new Map<number, HistoryOp>();
    for (const op of history) {
      if (op.type === 'invoke') open.set(op.process, op);
      else if (op.f === 'read') modeOf.set(op.index, ((open.get(op.process)?.value as { mode?: string } | null)?.mode ?? 'txn'));
    }
    const okReads = history.filter((o) => o.f === 'read' && o.type === 'ok');
    const byMode = (m: string): number => okReads.filter((o) => modeOf.get(o.index) === m).length;
    const details = [`reads ${r.reads} (in a transaction ${byMode('txn')}, snapshot scan ${byMode('snapshot')}), transfers ok ${r.transfersOk}`];
    for (const w of r.wrongTotal.slice(0, 5)) details.push(`history index ${w.index} (${modeOf.get(w.index) ?? 'txn'} read): total ${w.total} ${JSON.stringify(w.balances)}`);
    for (const m of r.missingAccounts.slice(0, 5)) details.push(`history index ${m.index}: missing accounts ${m.accounts.join(',')}`);
    return { valid: r.valid, anomalies, lostWrites: 0, details };
  }
}
