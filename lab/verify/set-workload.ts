/**
 * Set: unique elements inserted as rows; after the faults heal, one final whole-table read must hold
 * every acknowledged insert (anything missing is a lost write) and nothing never attempted.
 */
import type { TesseraClient } from '../../client/tessera-client';
import type { HistoryOp, HistoryRecorder } from './history';
import { checkSet } from './set-checker';
import { completionOfError, errorText, retryBounded, type OpContext, type Workload, type WorkloadVerdict } from './workload';

export const SET_TABLE = 'verify_set';
export const FINAL_READ_ATTEMPTS_MAX = 60;
export const FINAL_READ_TIMEOUT_MS = 10_000;

export class SetWorkload implements Workload {
  readonly name = 'set';
  private next = 0;

  constructor(readonly table: string = SET_TABLE) {}

  async setup(client: TesseraClient): Promise<void> {
    await client.createTable({ name: this.table, columns: [{ name: 'id', type: 'int64' }, { name: 'p', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, ifNotExists: true });
  }

  async step(ctx: OpContext): Promise<'ok' | 'fail' | 'info'> {
    const id = this.next++;
    const inv = ctx.recorder.invoke(ctx.process, 'add', id);
    try {
      await ctx.client.table(this.table).upsert({ id: BigInt(id), p: BigInt(ctx.process) }, { timeoutMs: ctx.opTimeoutMs });
      ctx.recorder.complete(inv, 'ok', id);
      return 'ok';
    } catch (e) {
      const type = completionOfError(e, false);
      ctx.recorder.complete(inv, type, id, errorText(e));
      return type;
    }
  }

  async final(client: TesseraClient, recorder: HistoryRecorder, process: number): Promise<void> {
    const inv = recorder.invoke(process, 'read', null);
    try {
      const rows = await retryBounded(() => client.table(this.table).scan({ timeoutMs: FINAL_READ_TIMEOUT_MS }), FINAL_READ_ATTEMPTS_MAX, 500);
      recorder.complete(inv, 'ok', rows.map((r) => Number(r['id'] as bigint)).sort((a, b) => a - b));
    } catch (e) {
      recorder.complete(inv, 'fail', null, errorText(e));
    }
  }

  check(history: readonly HistoryOp[]): WorkloadVerdict {
    const r = checkSet(history);
    const anomalies: Record<string, number> = {};
    if (r.lost.length) anomalies['lost'] = r.lost.length;
    if (r.unexpected.length) anomalies['unexpected'] = r.unexpected.length;
    if (r.finalReads === 0) anomalies['no-final-read'] = 1;
    return {
      valid: r.valid,
      anomalies,
      lostWrites: r.lost.length,
      details: [`attempted ${r.attempted}, acknowledged ${r.acknowledged}, recovered info adds ${r.recovered}`, ...(r.lost.length ? [`lost: ${JSON.stringify(r.lost.slice(0, 20))}`] : []), ...(r.unexpected.length ? [`unexpected: ${JSON.stringify(r.unexpected.slice(0, 20))}`] : [])],
    };
  }
}
