/**
 * Bank through Percolator transactions (docs/percolator.md): the same 8 accounts and checks as the
 * YugabyteDB-style bank (bank-workload.ts), but every transfer and every whole-table read is a
 * client-built Percolator transaction (oracle timestamps, primary lock, prewrite, commit of the
 * primary, lazy secondaries). Every ok read must sum to the initial total with no negative balance.
 *
 * With the client-crash nemesis (`tessera verify --txn_protocol percolator --nemesis client-crash,…`)
 * a share of transfers stops as if its client died — after prewriting every cell (the commit never
 * happens: readers must roll it back) or right after the primary's commit record (the commit point
 * passed: readers must roll the secondary forward). The client's answer is lost with it, so those
 * transfers complete 'info'. At the end, the final read meets every account, and the raw rows must
 * hold no lock at all: an orphaned lock left behind is the anomaly `orphaned-lock`.
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { PercolatorTransaction } from '../../client/percolator/percolator-txn';
import { decodeRowState } from '../../client/percolator/row-state';
import { checkBank } from './bank-checker';
import { BANK_ACCOUNTS, BANK_INITIAL_BALANCE } from './bank-workload';
import type { HistoryOp, HistoryRecorder } from './history';
import { completionOfError, errorText, retryBounded, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const PERCOLATOR_BANK_TABLE = 'verify_pbank';
const TRANSFER_AMOUNT_MAX = 5;
const READ_SHARE = 0.5;
/** Share of transfers that "crash" their client when the client-crash nemesis is on. */
export const CLIENT_CRASH_SHARE = 0.05;
/**
 * Lock TTL of a crashing transfer: its client lives on (one client per worker), so the lock is not
 * orphaned by a lost liveness token but by its age; short, so the readers that meet it wait little.
 */
const CRASHED_LOCK_TTL_MS = 300;
const FINAL_READ_ATTEMPTS = 20;

export interface PercolatorBankOptions {
  clientCrash?: boolean;
}

async function abortQuietly(t: PercolatorTransaction | undefined): Promise<void> {
  if (t && t.state === 'open') await t.abort().catch(() => undefined);
}

export class PercolatorBankWorkload implements Workload {
  readonly name = 'bank';
  readonly table = PERCOLATOR_BANK_TABLE;
  private readonly accounts = Array.from({ length: BANK_ACCOUNTS }, (_, i) => String(i));
  /** Crashed transfers by where they stopped. */
  readonly crashes = { prewrite: 0, primary: 0 };
  /** Locks still in the raw rows after the final read (undefined: the final read did not run). */
  private locksLeft: number | undefined;

  constructor(private readonly o: PercolatorBankOptions = {}) {}

  async setup(client: TesseraClient): Promise<void> {
    await client.percolator.createTable({ name: PERCOLATOR_BANK_TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
    await retryBounded(async () => {
      const t = await client.percolator.begin();
      for (const a of this.accounts) await t.put(PERCOLATOR_BANK_TABLE, { id: BigInt(a), balance: BigInt(BANK_INITIAL_BALANCE) });
      await t.commit();
    }, 10, 500);
  }

  step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    return ctx.rng.chance(READ_SHARE) ? this.read(ctx) : this.transfer(ctx);
  }

  private async readAll(t: PercolatorTransaction): Promise<Record<string, number>> {
    const rows = await Promise.all(this.accounts.map((a) => t.get(PERCOLATOR_BANK_TABLE, { id: BigInt(a) })));
    const balances: Record<string, number> = {};
    rows.forEach((r, i) => {
      if (r) balances[this.accounts[i]!] = Number(r['balance'] as bigint);
    });
    return balances;
  }

  private async read(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const inv = ctx.recorder.invoke(ctx.process, 'read', { mode: 'percolator' });
    let t: PercolatorTransaction | undefined;
    try {
      t = await ctx.client.percolator.begin({ timeoutMs: ctx.opTimeoutMs });
      const balances = await this.readAll(t);
      await abortQuietly(t);
      ctx.recorder.complete(inv, 'ok', balances);
      return 'ok';
    } catch (e) {
      await abortQuietly(t);
      ctx.recorder.complete(inv, 'fail', null, errorText(e));
      return 'fail';
    }
  }

  private async transfer(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const from = ctx.rng.int(BANK_ACCOUNTS);
    const to = (from + 1 + ctx.rng.int(BANK_ACCOUNTS - 1)) % BANK_ACCOUNTS;
    const amount = 1 + ctx.rng.int(TRANSFER_AMOUNT_MAX);
    const crash = this.o.clientCrash && ctx.rng.chance(CLIENT_CRASH_SHARE) ? (ctx.rng.chance(0.5) ? 'prewrite' : 'primary') : undefined;
    const inv = ctx.recorder.invoke(ctx.process, 'transfer', { from, to, amount, ...(crash ? { crash } : {}) });
    let t: PercolatorTransaction | undefined;
    let committing = false;
    try {
      t = await ctx.client.percolator.begin({ timeoutMs: ctx.opTimeoutMs, ...(crash ? { TEST_dieAfter: crash, lockTtlMs: CRASHED_LOCK_TTL_MS } : {}) });
      const [a, b] = await Promise.all([t.get(PERCOLATOR_BANK_TABLE, { id: BigInt(from) }), t.get(PERCOLATOR_BANK_TABLE, { id: BigInt(to) })]);
      const fa = Number((a?.['balance'] as bigint | undefined) ?? 0n);
      const fb = Number((b?.['balance'] as bigint | undefined) ?? 0n);
      if (!a || !b || fa < amount) {
        await abortQuietly(t);
        ctx.recorder.complete(inv, 'fail', { from, to, amount }, 'insufficient funds');
        return 'fail';
      }
      await t.put(PERCOLATOR_BANK_TABLE, { id: BigInt(from), balance: BigInt(fa - amount) });
      await t.put(PERCOLATOR_BANK_TABLE, { id: BigInt(to), balance: BigInt(fb + amount) });
      committing = true;
      await t.commit();
      if (crash) {
        // The client "died" at that point: whatever it did, its caller never heard.
        this.crashes[crash]++;
        ctx.recorder.complete(inv, 'info', { from, to, amount }, `client crashed after ${crash}`);
        return 'info';
      }
      ctx.recorder.complete(inv, 'ok', { from, to, amount });
      return 'ok';
    } catch (e) {
      const type = committing ? completionOfError(e, false) : 'fail';
      if (!committing) await abortQuietly(t);
      ctx.recorder.complete(inv, type, { from, to, amount }, errorText(e));
      return type;
    }
  }

  /** One more read that meets every account (resolving what it finds), then count the locks left in the raw rows. */
  async final(client: TesseraClient, recorder: HistoryRecorder, process: number): Promise<void> {
    const inv = recorder.invoke(process, 'read', { mode: 'percolator-final' });
    try {
      const balances = await retryBounded(async () => {
        const t = await client.percolator.begin();
        try {
          return await this.readAll(t);
        } finally {
          await abortQuietly(t);
        }
      }, FINAL_READ_ATTEMPTS, 250);
      recorder.complete(inv, 'ok', balances);
    } catch (e) {
      recorder.complete(inv, 'fail', null, errorText(e));
      return;
    }
    const raw = await retryBounded(() => client.table(PERCOLATOR_BANK_TABLE).scan({ timeoutMs: 5_000 }), 10, 250);
    this.locksLeft = raw.filter((r) => decodeRowState(r).lock !== undefined).length;
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkBank(history, { total: BANK_ACCOUNTS * BANK_INITIAL_BALANCE, accounts: this.accounts });
    const anomalies: Record<string, number> = {};
    if (r.wrongTotal.length) anomalies['wrong-total'] = r.wrongTotal.length;
    if (r.negative.length) anomalies['negative-balance'] = r.negative.length;
    if (r.missingAccounts.length) anomalies['missing-accounts'] = r.missingAccounts.length;
    if (this.locksLeft !== undefined && this.locksLeft > 0) anomalies['orphaned-lock'] = this.locksLeft;
    const details = [
      `percolator: reads ${r.reads}, transfers ok ${r.transfersOk}` + (this.o.clientCrash ? `, client crashes after prewrite ${this.crashes.prewrite}, after the primary's commit ${this.crashes.primary}` : ''),
      this.locksLeft === undefined ? 'final read did not complete: locks left not counted' : `locks left in the raw rows after the final read: ${this.locksLeft}`,
    ];
    for (const w of r.wrongTotal.slice(0, 5)) details.push(`history index ${w.index}: total ${w.total} ${JSON.stringify(w.balances)}`);
    for (const m of r.missingAccounts.slice(0, 5)) details.push(`history index ${m.index}: missing accounts ${m.accounts.join(',')}`);
    const inconclusive = this.locksLeft === undefined ? 'the final read did not complete, so orphaned locks could not be counted' : undefined;
    return { valid: Object.keys(anomalies).length === 0, anomalies, lostWrites: 0, details, ...(inconclusive ? { inconclusive } : {}) };
  }
}
