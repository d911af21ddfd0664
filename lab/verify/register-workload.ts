/**
 * Register: single-row reads, blind writes and compare-and-set of unique values over a rolling set of
 * keys, checked for linearizability per key. Keys roll over (a key gets at most OPS_PER_KEY
 * operations) so each per-key search stays small even with indeterminate operations.
 *
 * tessera has no server-side conditional write, so cas(key, expected, new) is a snapshot-isolation
 * transaction: read the key at the transaction's snapshot, write `new` only if the value equals
 * `expected`, commit. First committer wins makes the read-compare-write atomic: a concurrent write of
 * the key after our snapshot must abort one of the two. Completions (Jepsen's cas-register):
 *  - ok true: committed, the swap happened;
 *  - fail: the current value differed (nothing written), or the transaction ended before commit was
 *    asked for (conflict, abort, a read or write error), or commit answered a definite refusal;
 *  - info: commit was sent and its outcome is unknown (timeout, network error, lost answer).
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { IsolationLevel, Transaction } from '../../client/transaction';
import { pairCalls, type HistoryOp } from './history';
import { checkLinearizableRegisters } from './linearizability';
import { completionOfError, errorText, waitForTransactionsTable, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const REGISTER_TABLE = 'verify_register';
/** Keys written and read at the same time. */
const ACTIVE_KEYS = 8;
/** Operations per key before the key is retired for a fresh one. */
const OPS_PER_KEY = 120;
/** Mix of operations: reads, blind writes, the rest compare-and-set. */
const READ_SHARE = 0.45;
const WRITE_SHARE = 0.3;
/** Search bound of the per-key linearizability check (past it a key is 'unknown', never valid). */
const SEARCH_STATES_MAX = 500_000;
/** Ok reads concurrent with a write of their key a register history needs to count (contendedReads). */
export const CONTENDED_READS_MIN = 50;
/** The error text of a cas whose expected value differed (a definite fail: nothing was written). */
export const CAS_MISMATCH = 'cas: current value differs from expected';

export const REGISTER_WRITE_MODES = ['direct', 'txn'] as const;
export type RegisterWriteMode = (typeof REGISTER_WRITE_MODES)[number];

export interface RegisterOptions {
  /** Include compare-and-set transactions (default true); false = reads and writes only. */
  cas?: boolean;
  /**
   * How a blind write is sent: 'direct' (default) = a non-transactional single-row upsert (the
   * single-tablet fast path, no intents); 'txn' = a one-row snapshot-isolation transaction. With cas
   * in the mix, 'direct' also checks that a fast-path write and a pending transaction's intent on the
   * same row conflict.
   */
  writes?: RegisterWriteMode;
  /** Isolation of the cas and txn-write transactions (default snapshot). */
  isolation?: IsolationLevel;
}

export class RegisterWorkload implements Workload {
  readonly name = 'register';
  readonly table = REGISTER_TABLE;
  private opsStarted = 0;
  private seq = 0;
  /** Last value each key was seen holding (read, written or swapped in): what a cas expects. */
  private readonly lastKnown = new Map<string, string | null>();
  private readonly cas: boolean;
  private readonly writes: RegisterWriteMode;
  private readonly isolation: IsolationLevel;

  constructor(o: RegisterOptions = {}) {
    this.isolation = o.isolation ?? 'snapshot';
    this.cas = o.cas ?? true;
    this.writes = o.writes ?? 'direct';
  }

  async setup(client: TesseraClient): Promise<void> {
    if (this.cas || this.writes === 'txn') await waitForTransactionsTable(client);
    await client.createTable({ name: REGISTER_TABLE, columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['k'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const generation = Math.floor(this.opsStarted++ / (ACTIVE_KEYS * OPS_PER_KEY));
    const k = generation * ACTIVE_KEYS + ctx.rng.int(ACTIVE_KEYS);
    const key = String(k);
    const dice = ctx.rng.next();
    if (dice < READ_SHARE) return this.read(ctx, k, key);
    if (dice < READ_SHARE + WRITE_SHARE || !this.cas) return this.write(ctx, k, key);
    return this.compareAndSet(ctx, k, key);
  }

  private nextValue(ctx: OpContext): string {
    return `${ctx.process}.${this.seq++}`;
  }

  private async read(ctx: OpContext, k: number, key: string): Promise<'ok' | 'fail' | 'info'> {
    const inv = ctx.recorder.invoke(ctx.process, 'read', null, key);
    try {
      const row = await ctx.client.table(REGISTER_TABLE).get({ k: BigInt(k) }, { timeoutMs: ctx.opTimeoutMs });
      const v = row?.['v'];
      const value = typeof v === 'string' ? v : null;
      ctx.recorder.complete(inv, 'ok', value);
      this.lastKnown.set(key, value);
      return 'ok';
    } catch (e) {
      const type = completionOfError(e, true);
      ctx.recorder.complete(inv, type, null, errorText(e));
      return type;
    }
  }

  private async write(ctx: OpContext, k: number, key: string): Promise<'ok' | 'fail' | 'info'> {
    const value = this.nextValue(ctx);
    const inv = ctx.recorder.invoke(ctx.process, 'write', value, key);
    let txn: Transaction | undefined;
    let committing = this.writes === 'direct';
    let commitHt: bigint | undefined;
    try {
      if (this.writes === 'direct') {
        await ctx.client.table(REGISTER_TABLE).upsert({ k: BigInt(k), v: value }, { timeoutMs: ctx.opTimeoutMs });
      } else {
        txn = await ctx.client.beginTransaction({ isolation: this.isolation, timeoutMs: ctx.opTimeoutMs });
        await txn.table(REGISTER_TABLE).upsert({ k: BigInt(k), v: value }, { timeoutMs: ctx.opTimeoutMs });
        committing = true;
        ({ commitHt } = await txn.commit({ timeoutMs: ctx.opTimeoutMs }));
      }
      ctx.recorder.complete(inv, 'ok', value, undefined, txnMeta(txn, commitHt));
      this.lastKnown.set(key, value);
      return 'ok';
    } catch (e) {
      const type = committing ? completionOfError(e, false) : 'fail';
      if (!committing) abortInBackground(txn);
      ctx.recorder.complete(inv, type, value, errorText(e), txnMeta(txn));
      return type;
    }
  }

  private async compareAndSet(ctx: OpContext, k: number, key: string): Promise<'ok' | 'fail' | 'info'> {
    const expected = this.lastKnown.get(key) ?? null;
    const next = this.nextValue(ctx);
    const inv = ctx.recorder.invoke(ctx.process, 'cas', [expected, next], key);
    let txn: Transaction | undefined;
    let committing = false;
    try {
      txn = await ctx.client.beginTransaction({ isolation: this.isolation, timeoutMs: ctx.opTimeoutMs });
      const t = txn.table(REGISTER_TABLE);
      const row = await t.get({ k: BigInt(k) }, { timeoutMs: ctx.opTimeoutMs });
      const v = row?.['v'];
      const current = typeof v === 'string' ? v : null;
      if (current !== expected) {
        abortInBackground(txn);
        ctx.recorder.complete(inv, 'fail', [expected, next], `${CAS_MISMATCH} (read ${JSON.stringify(current)})`, txnMeta(txn));
        return 'fail';
      }
      await t.upsert({ k: BigInt(k), v: next }, { timeoutMs: ctx.opTimeoutMs });
      committing = true;
      const { commitHt } = await txn.commit({ timeoutMs: ctx.opTimeoutMs });
      ctx.recorder.complete(inv, 'ok', true, undefined, txnMeta(txn, commitHt));
      this.lastKnown.set(key, next);
      return 'ok';
    } catch (e) {
      // Before commit was asked for, nothing of the transaction can become visible: a definite fail.
      const type = committing ? completionOfError(e, false) : 'fail';
      if (!committing) abortInBackground(txn);
      ctx.recorder.complete(inv, type, [expected, next], errorText(e), txnMeta(txn));
      return type;
    }
  }

  async final(): Promise<void> {
    // Linearizability needs no final read: every read in the history is already checked.
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkLinearizableRegisters(history, SEARCH_STATES_MAX);
    const cas = casFigures(history);
    const details = [`keys checked: ${r.keys}; cas ok ${cas.ok}, mismatched ${cas.mismatch}, other fail ${cas.fail}, info ${cas.info}`];
    for (const f of r.failures.slice(0, 5)) {
      const stuck = f.stuck ? `; longest linearizable prefix ${f.stuck.prefixOps} ops ending in state ${JSON.stringify(f.stuck.state)}, then history index ${f.stuck.blockedIndex} cannot follow` : '';
      details.push(`key ${f.key}: not linearizable (${f.ops} ops)${stuck}; excerpt: ${JSON.stringify(f.witness)}`);
    }
    if (r.unknown.length) details.push(`keys with search bound reached (unknown): ${r.unknown.map((u) => u.key).join(', ')}`);
    const contended = contendedReads(history);
    details.push(`reads concurrent with a write or cas of their key: ${contended} (needs >= ${CONTENDED_READS_MIN})`);
    return {
      ...(contended < CONTENDED_READS_MIN ? { vacuous: `only ${contended} ok reads ran concurrently with a write or cas of their key (needs >= ${CONTENDED_READS_MIN}): stale reads could not show` } : {}),
      valid: r.failures.length === 0,
      anomalies: r.failures.length ? { nonlinearizable: r.failures.length } : {},
      ...(r.unknown.length ? { inconclusive: `${r.unknown.length} key(s) exceeded the search bound` } : {}),
      lostWrites: 0,
      details,
    };
  }
}

/** What the history keeps of a transaction for whoever reads an anomaly. */
function txnMeta(txn: Transaction | undefined, commitHt?: bigint): Record<string, string> | undefined {
  if (!txn) return undefined;
  return { txn: txn.txnId, statusTablet: txn.statusTablet ?? 'none (no status record)', readHt: String(txn.readHt), ...(commitHt !== undefined ? { commitHt: String(commitHt) } : {}) };
}

/** The abort of a transaction we give up on: its outcome does not matter to the history. */
function abortInBackground(txn: Transaction | undefined): void {
  if (txn) void txn.abort({ timeoutMs: 1_000 }).catch(() => undefined);
}

/**
 * Ok reads whose invocation–completion interval overlaps that of a write or cas (ok or info: it may
 * have taken effect) of the same key. Without such reads a linearizability check cannot see a stale
 * or fractured read, so a register history needs some to count.
 */
export function contendedReads(history: readonly HistoryOp[]): number {
  const calls = pairCalls(history);
  const writes = new Map<string, Array<[number, number]>>();
  for (const c of calls) {
    if ((c.f === 'write' || c.f === 'cas') && c.type !== 'fail' && c.key !== undefined) {
      const end = c.type === 'info' ? Number.POSITIVE_INFINITY : c.completeTime;
      const arr = writes.get(c.key) ?? [];
      arr.push([c.invokeTime, end]);
      writes.set(c.key, arr);
    }
  }
  let n = 0;
  for (const c of calls) {
    if (c.f !== 'read' || c.type !== 'ok' || c.key === undefined) continue;
    if ((writes.get(c.key) ?? []).some(([a, b]) => a < c.completeTime && c.invokeTime < b)) n++;
  }
  return n;
}

export function casFigures(history: readonly HistoryOp[]): { ok: number; mismatch: number; fail: number; info: number } {
  const c = { ok: 0, mismatch: 0, fail: 0, info: 0 };
  for (const o of history) {
    if (o.f !== 'cas' || o.type === 'invoke') continue;
    if (o.type === 'fail' && o.error?.startsWith(CAS_MISMATCH)) c.mismatch++;
    else c[o.type]++;
  }
  return c;
}
