/**
 * Percolator's observers (OSDI 2010 §2.4): a write to an observed column sets the row's notify hint
 * in the same row transaction as its commit record; workers scan for notify hints, run the observer
 * in a Percolator transaction that also writes the row's ack (its start timestamp), and clear the
 * hint. Two runs for one change both write the row, so at most one commits; several changes before a
 * run are seen by it together (message collapsing). A worker killed mid-run leaves locks its next
 * reader resolves and the hint in place, so the change is not lost.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Row } from '../client-types';
import type { Table } from '../table';
import type { Percolator } from './percolator';
import type { PercolatorTransaction } from './percolator-txn';
import { NOTIFY_COLUMN } from './row-state';

export interface Observer {
  name: string;
  table: string;
  /** The user's code: read and write through `txn`; throwing aborts this run (the hint stays). */
  run(txn: PercolatorTransaction, key: Row, row: Row | undefined): Promise<void>;
}

export interface ObserverRunnerDeps {
  percolator: Percolator;
  table(name: string): Table;
  random(): number;
}

export interface PassResult {
  /** Observer transactions committed. */
  runs: number;
  /** Hints cleared without a run (the change was acknowledged already). */
  acknowledged: number;
  /** Runs that did not commit (a conflict with another run or a writer): retried on a later pass. */
  conflicts: number;
  /** Runs whose observer threw (the hint stays). */
  failures: number;
}

/** Notified rows read per scan page and per pass (the rest wait for the next pass). */
export const NOTIFY_ROWS_PER_PASS_MAX = 10_000;

export class ObserverRunner {
  constructor(
    private readonly deps: ObserverRunnerDeps,
    private readonly observers: readonly Observer[],
    private readonly lockTtlMs = 3_000,
  ) {
    if (observers.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'an observer app needs at least one observer');
    for (const o of observers) {
      if (!o || typeof o.name !== 'string' || typeof o.table !== 'string' || typeof o.run !== 'function') {
        throw new DbError(ErrorCode.INVALID_ARGUMENT, 'each observer needs { name, table, run(txn, key, row) }');
      }
    }
  }

  /** One scan of every observed table: each notified row is looked at once. */
  async runPass(): Promise<PassResult> {
    const r: PassResult = { runs: 0, acknowledged: 0, conflicts: 0, failures: 0 };
    for (const o of this.observers) {
      const t = this.deps.table(o.table);
      const rows = (await t.scan({ columns: [NOTIFY_COLUMN], limit: NOTIFY_ROWS_PER_PASS_MAX })).filter((x) => typeof x[NOTIFY_COLUMN] === 'bigint');
      // Start at a random row, as the paper's scanners do, so workers spread over the backlog.
      const from = Math.floor(this.deps.random() * rows.length);
      for (let i = 0; i < rows.length; i++) await this.runOne(o, t, rows[(from + i) % rows.length]!, r);
    }
    return r;
  }

  private async runOne(o: Observer, t: Table, hinted: Row, r: PassResult): Promise<void> {
    const notifyTs = hinted[NOTIFY_COLUMN] as bigint;
    const { [NOTIFY_COLUMN]: _hint, ...key } = hinted;
    const txn = await this.deps.percolator.begin({ lockTtlMs: this.lockTtlMs });
    try {
      const ob = await txn.observe(o.table, key);
      // An ack is the start of a run, which is above every change that run saw.
      if (ob.changeTs === undefined || (ob.ackTs !== undefined && ob.ackTs > ob.changeTs)) {
        await txn.abort();
        await this.clear(t, key, notifyTs);
        r.acknowledged++;
        return;
      }
      await o.run(txn, key, ob.row);
      await txn.ack(o.table, key);
      await txn.commit();
      r.runs++;
      await this.clear(t, key, notifyTs);
    } catch (e) {
      await txn.abort();
      const code = DbError.from(e).code;
      if (code === ErrorCode.TXN_CONFLICT || code === ErrorCode.TXN_ABORTED) r.conflicts++;
      else r.failures++;
    }
  }

  /** Clear the hint unless a newer change set it again meanwhile (then the next pass runs for it). */
  private async clear(t: Table, key: Row, notifyTs: bigint): Promise<void> {
    await t.checkAndMutate(key, { column: NOTIFY_COLUMN, op: 'EQ', value: notifyTs }, { deleteColumns: [NOTIFY_COLUMN] });
  }
}
