import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import { tsFromWallMs } from '../../common/oracle-ts';
import {
  WRITES_KEPT_MIN,
  commitCell,
  decodeRowState,
  encodeRowState,
  prewrite,
  readAt,
  rollbackCell,
  statusAt,
  observationAt,
  ACK_FIELD,
  SEQ_COLUMN,
  STATE_COLUMN,
  type PercLock,
  type PercRowState,
} from '../../client/percolator/row-state';

const NOW = 1_000_000;
const ts = (ms: number, logical = 0): bigint => tsFromWallMs(ms) + BigInt(logical);
const lockAt = (startTs: bigint): PercLock => ({ startTs, primary: { table: 't', key: { id: 1n } }, wallMs: NOW, ttlMs: 1000 });
const empty = (): PercRowState => decodeRowState(undefined);

/** Write the state out and read it back, as a round trip through the hidden columns would. */
function stored(st: PercRowState): PercRowState {
  return decodeRowState({ [SEQ_COLUMN]: (st.seq ?? 0n) + 1n, [STATE_COLUMN]: encodeRowState(st) });
}

function must<T extends { type: string }>(o: T, type: string): Extract<T, { type: 'write' }> {
  expect(o.type).toBe(type);
  return o as Extract<T, { type: 'write' }>;
}

describe('percolator row state', () => {
  it('percolator: prewrite, commit, and reads at timestamps before, during and after', () => {
    const s1 = ts(NOW, 1);
    let st = stored(must(prewrite(empty(), lockAt(s1), { id: 1n, bal: 5n, raw: new Uint8Array([1, 2]) }), 'write').next);
    expect(readAt(st, s1 - 1n)).toEqual({ type: 'value', row: undefined });
    expect(readAt(st, s1 + 5n).type).toBe('locked');
    const c1 = ts(NOW, 10);
    st = stored(must(commitCell(st, s1, c1, NOW), 'write').next);
    expect(readAt(st, c1 - 1n)).toEqual({ type: 'value', row: undefined });
    expect(readAt(st, c1)).toEqual({ type: 'value', row: { id: 1n, bal: 5n, raw: new Uint8Array([1, 2]) } });
    expect(commitCell(st, s1, c1, NOW).type).toBe('done');
    expect(statusAt(st, s1)).toEqual({ type: 'committed', commitTs: c1 });
    // A delete is a version too; the older version stays readable below it.
    const s2 = ts(NOW, 20);
    st = stored(must(prewrite(st, lockAt(s2), null), 'write').next);
    st = stored(must(commitCell(st, s2, ts(NOW, 21), NOW), 'write').next);
    expect(readAt(st, ts(NOW, 21))).toEqual({ type: 'value', row: undefined });
    expect(readAt(st, ts(NOW, 20))).toEqual({ type: 'value', row: { id: 1n, bal: 5n, raw: new Uint8Array([1, 2]) } });
  });

  it('percolator: prewrite conflicts with any other lock and with a write at or after its start', () => {
    const st = stored(must(prewrite(empty(), lockAt(ts(NOW, 5)), { id: 1n }), 'write').next);
    expect(prewrite(st, lockAt(ts(NOW, 9)), { id: 1n }).type).toBe('conflict');
    expect(prewrite(st, lockAt(ts(NOW, 1)), { id: 1n }).type).toBe('conflict');
    expect(prewrite(st, lockAt(ts(NOW, 5)), { id: 1n }).type).toBe('done');
    const committed = stored(must(commitCell(st, ts(NOW, 5), ts(NOW, 8), NOW), 'write').next);
    expect(prewrite(committed, lockAt(ts(NOW, 8)), { id: 1n })).toEqual({ type: 'conflict', commitTs: ts(NOW, 8) });
    expect(prewrite(committed, lockAt(ts(NOW, 9)), { id: 1n }).type).toBe('write');
  });

  it('percolator: a rollback record stops a late prewrite and a late commit of the rolled-back transaction', () => {
    const s = ts(NOW, 3);
    let st = stored(must(prewrite(empty(), lockAt(s), { id: 1n }), 'write').next);
    st = stored(must(rollbackCell(st, s, NOW), 'write').next);
    expect(st.lock).toBeUndefined();
    expect(st.data.size).toBe(0);
    expect(statusAt(st, s)).toEqual({ type: 'rolled-back' });
    expect(prewrite(st, lockAt(s), { id: 1n }).type).toBe('conflict');
    expect(commitCell(st, s, ts(NOW, 4), NOW).type).toBe('rolled-back');
    // A resolver that finds no lock and no record on a primary leaves a rollback record there.
    const never = stored(must(rollbackCell(empty(), s, NOW), 'write').next);
    expect(statusAt(never, s)).toEqual({ type: 'rolled-back' });
    // A committed cell is never rolled back.
    let c = stored(must(prewrite(empty(), lockAt(s), { id: 1n }), 'write').next);
    c = stored(must(commitCell(c, s, ts(NOW, 7), NOW), 'write').next);
    expect(rollbackCell(c, s, NOW)).toEqual({ type: 'committed', commitTs: ts(NOW, 7) });
  });

  it('percolator: old versions are dropped after the retention, newest kept; reads below them get SNAPSHOT_TOO_OLD', () => {
    let st = empty();
    const early = NOW - 3_600_000;
    for (let i = 0; i < WRITES_KEPT_MIN + 5; i++) {
      const s = ts(early, 10 * i);
      st = stored(must(prewrite(st, lockAt(s), { id: 1n, v: BigInt(i) }), 'write').next);
      st = stored(must(commitCell(st, s, s + 1n, early), 'write').next);
    }
    expect(st.writes).toHaveLength(WRITES_KEPT_MIN + 5);
    // One more commit, now: the old ones beyond the newest WRITES_KEPT_MIN go (one old commit stays).
    const s = ts(NOW, 1);
    st = stored(must(prewrite(st, lockAt(s), { id: 1n, v: 99n }), 'write').next);
    st = stored(must(commitCell(st, s, s + 1n, NOW), 'write').next);
    expect(st.writes.length).toBeLessThanOrEqual(WRITES_KEPT_MIN + 1);
    expect(st.truncated).toBe(true);
    expect(readAt(st, s + 1n)).toEqual({ type: 'value', row: { id: 1n, v: 99n } });
    expect(() => readAt(st, ts(early, 1))).toThrow(expect.objectContaining({ code: ErrorCode.SNAPSHOT_TOO_OLD }));
  });

  it('percolator: a hidden state that is not JSON is CORRUPTION', () => {
    expect(() => decodeRowState({ [SEQ_COLUMN]: 1n, [STATE_COLUMN]: '{' })).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });

  it('observers: a change of an observed column marks its commit and asks for a notify; the ack survives other writes', () => {
    const write = (st: PercRowState, s: bigint, v: Record<string, unknown>): { st: PercRowState; notifyTs: bigint | undefined } => {
      const p = must(prewrite(st, lockAt(s), v as never, ['body']), 'write');
      const c = must(commitCell(stored(p.next), s, s + 1n, NOW), 'write') as { next: PercRowState; notifyTs?: bigint };
      return { st: stored(c.next), notifyTs: c.notifyTs };
    };
    let r = write(empty(), ts(NOW, 10), { id: 1n, body: 'a' });
    expect(r.notifyTs).toBe(ts(NOW, 11));
    expect(observationAt(r.st, ts(NOW, 50))).toEqual({ changeTs: ts(NOW, 11), ackTs: undefined });
    // An observer run at 20 writes the same body plus its ack: no new change, no notify.
    r = write(r.st, ts(NOW, 20), { id: 1n, body: 'a', [ACK_FIELD]: ts(NOW, 20) });
    expect(r.notifyTs).toBeUndefined();
    // A write of another column keeps the ack; the change is still acknowledged.
    r = write(r.st, ts(NOW, 30), { id: 1n, body: 'a', other: 5n });
    expect(r.notifyTs).toBeUndefined();
    expect(observationAt(r.st, ts(NOW, 50))).toEqual({ changeTs: ts(NOW, 11), ackTs: ts(NOW, 20) });
    r = write(r.st, ts(NOW, 40), { id: 1n, body: 'b' });
    expect(r.notifyTs).toBe(ts(NOW, 41));
    expect(observationAt(r.st, ts(NOW, 50))).toEqual({ changeTs: ts(NOW, 41), ackTs: ts(NOW, 20) });
  });
});
