/**
 * Register: single-row reads and writes of unique values over a rolling set of keys, checked for
 * linearizability per key. Keys roll over (a key gets at most OPS_PER_KEY operations) so each
 * per-key search stays small even with indeterminate writes. No compare-and-set: the client has no
 * conditional write, and without client.beginTransaction there is no way to build one.
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { HistoryOp } from './history';
import { checkLinearizableRegisters } from './linearizability';
import { completionOfError, errorText, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const REGISTER_TABLE = 'verify_register';
/** Keys written and read at the same time. */
const ACTIVE_KEYS = 4;
/** Operations per key before the key is retired for a fresh one. */
const OPS_PER_KEY = 120;

export class RegisterWorkload implements Workload {
  readonly name = 'register';
  readonly table = REGISTER_TABLE;
  private opsStarted = 0;
  private seq = 0;

  async setup(client: TesseraClient): Promise<void> {
    await client.createTable({ name: REGISTER_TABLE, columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['k'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const generation = Math.floor(this.opsStarted++ / (ACTIVE_KEYS * OPS_PER_KEY));
    const k = generation * ACTIVE_KEYS + ctx.rng.int(ACTIVE_KEYS);
    const key = String(k);
    const t = ctx.client.table(REGISTER_TABLE);
    if (ctx.rng.chance(0.5)) {
      const inv = ctx.recorder.invoke(ctx.process, 'read', null, key);
      try {
        const row = await t.get({ k: BigInt(k) }, { timeoutMs: ctx.opTimeoutMs });
        const v = row?.['v'];
        ctx.recorder.complete(inv, 'ok', typeof v === 'string' ? v : null);
        return 'ok';
      } catch (e) {
        const type = completionOfError(e, true);
        ctx.recorder.complete(inv, type, null, errorText(e));
        return type;
      }
    }
    const value = `${ctx.process}.${this.seq++}`;
    const inv = ctx.recorder.invoke(ctx.process, 'write', value, key);
    try {
      await t.upsert({ k: BigInt(k), v: value }, { timeoutMs: ctx.opTimeoutMs });
      ctx.recorder.complete(inv, 'ok', value);
      return 'ok';
    } catch (e) {
      const type = completionOfError(e, false);
      ctx.recorder.complete(inv, type, value, errorText(e));
      return type;
    }
  }

  async final(): Promise<void> {
    // Linearizability needs no final read: every read in the history is already checked.
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkLinearizableRegisters(history, 500_000);
    const details = [`keys checked: ${r.keys}`];
    for (const f of r.failures.slice(0, 5)) details.push(`key ${f.key}: not linearizable (${f.ops} ops); first ops: ${JSON.stringify(f.witness?.slice(0, 8))}`);
    if (r.unknown.length) details.push(`keys with search bound reached (unknown): ${r.unknown.map((u) => u.key).join(', ')}`);
    return {
      valid: r.failures.length === 0,
      anomalies: r.failures.length ? { nonlinearizable: r.failures.length } : {},
      ...(r.unknown.length ? { inconclusive: `${r.unknown.length} key(s) exceeded the search bound` } : {}),
      lostWrites: 0,
      details,
    };
  }
}
