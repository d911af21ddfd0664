/**
 * The `TEST_` faults a tablet replica injects into its own apply stage (docs/flags.md): a storage
 * failure, one corrupted value, a sleep before a write batch. Each acts on this replica only.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { Logger } from '../../common/log';
import type { Entry } from '../../raft';
import type { OpId, RowOp } from '../../docdb';
import { TEST_CORRUPT_TABLET_REPLICA, TEST_FAIL_TABLET_REPLICA, TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS } from '../tserver-flags';
import { TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS } from './participant/participant-flags';

export interface TabletFaultsDeps {
  tabletId: string;
  flags: Flags;
  log: Logger;
}

export class TabletFaults {
  constructor(private readonly deps: TabletFaultsDeps) {}

  /** TEST_fail_tablet_replica names this tablet (or every tablet) and `ents` write something: the apply fails as a disk would. */
  failApply(ents: readonly Entry[]): void {
    const inject = this.deps.flags.get(TEST_FAIL_TABLET_REPLICA);
    if (inject !== '' && (inject === '*' || inject === this.deps.tabletId) && ents.some((e) => e.type === 'normal' && e.data.byteLength > 0)) {
      throw new DbError(ErrorCode.IO_ERROR, `TEST_fail_tablet_replica: simulated storage failure of tablet ${this.deps.tabletId}`);
    }
  }

  /** TEST_inject_sleep_before_applying_write_batch_ms: sleep before a RegularDB batch with WRITEs. */
  async sleepBeforeWriteBatch(): Promise<void> {
    const sleepMs = this.deps.flags.get(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS);
    if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
  }

  /** TEST_inject_sleep_before_applying_intents_ms: how long this replica waits before moving a committed transaction's intents. */
  applyIntentsDelayMs(): number {
    return this.deps.flags.get(TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS);
  }

  /** TEST_corrupt_tablet_replica names this tablet (or every tablet). */
  corruptionTargeted(): boolean {
    const corrupt = this.deps.flags.get(TEST_CORRUPT_TABLET_REPLICA);
    return corrupt !== '' && (corrupt === '*' || corrupt === this.deps.tabletId);
  }

  /**
   * TEST_corrupt_tablet_replica: change the first column value of these writes (plain ones about to
   * go to RegularDB, or a transaction's about to become provisional records) that can be changed, in
   * this replica's copy only, and clear the flag once done.
   */
  corruptOneWrite(writes: Array<{ ops: readonly RowOp[]; opId: OpId }>, what: string): void {
    for (const w of writes) {
      for (let k = 0; k < w.ops.length; k++) {
        const op = w.ops[k]!;
        if (op.type !== 'upsert') continue;
        const c = op.columns.findIndex((x) => x.value !== null);
        if (c < 0) continue;
        const ops = [...w.ops];
        ops[k] = { ...op, columns: op.columns.map((x, i) => (i === c ? { ...x, value: wrongValue(x.value) } : x)) };
        w.ops = ops;
        this.deps.flags.setAtRuntime(TEST_CORRUPT_TABLET_REPLICA.name, '', true);
        this.deps.log.warn({ tablet: this.deps.tabletId, index: w.opId.index, columnId: op.columns[c]!.columnId, what }, 'TEST_corrupt_tablet_replica: wrote one wrong value in this replica only');
        return;
      }
    }
  }
}

/** A value of the same type that differs from `v`. */
function wrongValue<V>(v: V): V | string | bigint | number | boolean | Buffer {
  if (typeof v === 'string') return `${v}#corrupt`;
  if (typeof v === 'bigint') return v + 1n;
  if (typeof v === 'number') return v + 1;
  if (typeof v === 'boolean') return !v;
  if (v instanceof Uint8Array) return Buffer.concat([v, Buffer.from([0])]);
  return v;
}
