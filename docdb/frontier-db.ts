/**
 * A KvEngine plus its frontier: every batch written through `write()` also stores the op id it came
 * from, atomically, and the in-memory copy only moves forward.
 */
import type { KvEngine, KvOp } from './kv-engine';
import type { OpId } from './doc-db-api';
import { decodeOpId, encodeOpId, FRONTIER_KEY, OP_ID_ZERO, opIdMax } from './frontier';

export class FrontierDb {
  private constructor(
    readonly engine: KvEngine,
    private current: OpId,
  ) {}

  static async open(engine: KvEngine): Promise<FrontierDb> {
    const v = await engine.get(FRONTIER_KEY);
    return new FrontierDb(engine, v === undefined ? OP_ID_ZERO : decodeOpId(v));
  }

  get frontier(): OpId {
    return this.current;
  }

  /** Write `ops` and the frontier max(current, opId) in one atomic batch. */
  async write(ops: KvOp[], opId: OpId, sync = false): Promise<void> {
    const f = opIdMax(this.current, opId);
    ops.push({ type: 'put', key: FRONTIER_KEY, value: encodeOpId(f) });
    await this.engine.write(ops, { sync });
    this.current = opIdMax(this.current, f);
  }
}
