/**
 * List-append (Elle-style): transactions of 1-4 micro-ops over a rolling set of keys; an append reads
 * the key's list (a comma-separated string column) and writes it back with a unique element added.
 * Checked with checkListAppend under the transactions' isolation: snapshot isolation (G2-item
 * allowed) or serializable (G2-item is an anomaly).
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { IsolationLevel } from '../../client/transaction';
import type { Row } from '../../client/client-types';
import type { HistoryOp } from './history';
import { checkListAppend, type MicroOp } from './list-append-checker';
import { completionOfError, errorText, type OpContext, type Workload, type WorkloadVerdict, waitForTransactionsTable } from './workload';

export const APPEND_TABLE = 'verify_append';
/** The same workload through Percolator transactions (docs/percolator.md) uses a table of its own. */
export const PERCOLATOR_APPEND_TABLE = 'verify_pappend';

/** What one list-append transaction needs, whichever protocol runs it. */
interface AppendTxn {
  get(k: bigint): Promise<Row | undefined>;
  upsert(k: bigint, v: string): Promise<void>;
  commit(): Promise<unknown>;
  abort(): Promise<void>;
}
const ACTIVE_KEYS = 6;
/** Transactions per key generation: keys roll over so lists stay short. */
const TXNS_PER_GENERATION = 300;
const MOPS_MAX = 4;

function parseList(v: unknown): number[] {
  return typeof v === 'string' && v.length ? v.split(',').map(Number) : [];
}

export class AppendWorkload implements Workload {
  readonly name = 'append';
  readonly table: string;
  private started = 0;
  private nextElement = 1;

  constructor(
    private readonly isolation: IsolationLevel = 'snapshot',
    private readonly protocol: 'yugabyte' | 'percolator' = 'yugabyte',
  ) {
    this.table = protocol === 'percolator' ? PERCOLATOR_APPEND_TABLE : APPEND_TABLE;
  }

  async setup(client: TesseraClient): Promise<void> {
    const spec = { name: this.table, columns: [{ name: 'k', type: 'int64' as const }, { name: 'v', type: 'string' as const }], primaryKey: { hash: ['k'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true };
    if (this.protocol === 'percolator') {
      await client.percolator.createTable(spec);
      return;
    }
    await waitForTransactionsTable(client);
    await client.createTable(spec);
  }

  private async begin(ctx: OpContext): Promise<AppendTxn> {
    const timeoutMs = ctx.opTimeoutMs;
    if (this.protocol === 'percolator') {
      const p = await ctx.client.percolator.begin({ timeoutMs });
      return {
        get: (k) => p.get(this.table, { k }),
        upsert: (k, v) => p.put(this.table, { k, v }),
        commit: () => p.commit(),
        abort: async () => {
          if (p.state === 'open') await p.abort();
        },
      };
    }
    const txn = await ctx.client.beginTransaction({ isolation: this.isolation, timeoutMs });
    const t = txn.table(this.table);
    return {
      get: (k) => t.get({ k }, { timeoutMs }),
      upsert: (k, v) => t.upsert({ k, v }, { timeoutMs }),
      commit: () => txn.commit({ timeoutMs }),
      abort: () => txn.abort({ timeoutMs: 1_000 }),
    };
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const gen = Math.floor(this.started++ / TXNS_PER_GENERATION);
    const n = 1 + ctx.rng.int(MOPS_MAX);
    const mops: MicroOp[] = [];
    for (let i = 0; i < n; i++) {
      const k = String(gen * ACTIVE_KEYS + ctx.rng.int(ACTIVE_KEYS));
      mops.push(ctx.rng.chance(0.5) ? ['append', k, this.nextElement++] : ['r', k, null]);
    }
    const inv = ctx.recorder.invoke(ctx.process, 'txn', mops);
    let txn: AppendTxn | undefined;
    let committing = false;
    try {
      txn = await this.begin(ctx);
      const t = txn;
      // Micro-ops on different keys are independent: each key's micro-ops run in order (an append
      // then a read of the same key must see it), different keys at the same time.
      const done: MicroOp[] = new Array<MicroOp>(mops.length);
      const byKey = new Map<string, number[]>();
      mops.forEach((m, i) => {
        const list = byKey.get(m[1]) ?? [];
        list.push(i);
        byKey.set(m[1], list);
      });
      await Promise.all(
        [...byKey.values()].map(async (idxs) => {
          for (const i of idxs) {
            const m = mops[i]!;
            const row = await t.get(BigInt(m[1]));
            const list = parseList(row?.['v']);
            if (m[0] === 'r') {
              done[i] = ['r', m[1], list];
            } else {
              await t.upsert(BigInt(m[1]), [...list, m[2]].join(','));
              done[i] = m;
            }
          }
        }),
      );
      committing = true;
      await txn.commit();
      ctx.recorder.complete(inv, 'ok', done);
      return 'ok';
    } catch (e) {
      const type = committing ? completionOfError(e, false) : 'fail';
      if (!committing) await txn?.abort().catch(() => undefined);
      ctx.recorder.complete(inv, type, mops, errorText(e));
      return type;
    }
  }

  async final(): Promise<void> {
    // Elle needs no final read: the reads inside the transactions carry the version orders.
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkListAppend(history, this.isolation === 'serializable' ? 'serializable' : 'snapshot-isolation');
    const anomalies: Record<string, number> = {};
    const details = [`txns ok ${r.txns.ok}, fail ${r.txns.fail}, info ${r.txns.info}`];
    for (const [name, list] of Object.entries(r.anomalies)) {
      if (!list || list.length === 0) continue;
      const allowed = (r.allowed as string[]).includes(name);
      if (!allowed) anomalies[name] = list.length;
      details.push(`${name}${allowed ? ' (allowed under snapshot isolation)' : ''}: ${list.length}; first: ${JSON.stringify(list[0]).slice(0, 400)}`);
    }
    details.push(`checked as ${this.isolation === 'serializable' ? 'serializable (G2-item is an anomaly)' : 'snapshot isolation'}`);
    return { valid: r.valid, anomalies, lostWrites: anomalies['lost-update'] ?? 0, details };
  }
}
