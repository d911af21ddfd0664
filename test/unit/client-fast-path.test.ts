/**
 * Deferred transactional writes (client/fast-path.ts): which write sets are single-tablet, the bounds
 * beyond which a write is not kept back, and that sending them keeps one tablet's order while
 * tablets go in parallel.
 */
import { describe, expect, it } from 'vitest';
import { DEFERRED_ROWS_MAX, DeferredWrites, sendDeferred, type DeferredWrite } from '../../client/fast-path';
import { DbError, ErrorCode } from '../../common/errors';

function w(tabletId: string, id: number, log: string[] = [], fail = false, schemaVersion = 1): DeferredWrite {
  return {
    table: 't',
    tabletId,
    hash: 0,
    schemaVersion,
    op: { type: 'UPSERT', key: { hashComponents: [{ int64Value: BigInt(id) }] } } as unknown as DeferredWrite['op'],
    send: async () => {
      await new Promise((r) => setImmediate(r));
      log.push(`${tabletId}:${id}`);
      if (fail) throw new DbError(ErrorCode.TXN_CONFLICT, `conflict on ${id}`);
    },
  };
}

describe('client fast path: deferred writes', () => {
  it('fast path: a write set is single-tablet only when every write names the same tablet and schema version', () => {
    const d = new DeferredWrites();
    expect(d.singleTablet()).toBeUndefined();
    d.add(w('a', 1));
    d.add(w('a', 2));
    expect(d.singleTablet()?.tabletId).toBe('a');
    d.add(w('b', 3));
    expect(d.singleTablet()).toBeUndefined();
    const v = new DeferredWrites();
    v.add(w('a', 1, [], false, 1));
    v.add(w('a', 2, [], false, 2));
    expect(v.singleTablet()).toBeUndefined();
  });

  it('fast path: beyond DEFERRED_ROWS_MAX rows a write is refused (sent at once by the caller), and take() empties the set', () => {
    const d = new DeferredWrites();
    for (let i = 0; i < DEFERRED_ROWS_MAX; i++) expect(d.add(w('a', i))).toBe(true);
    expect(d.add(w('a', -1))).toBe(false);
    expect(d.take().length).toBe(DEFERRED_ROWS_MAX);
    expect(d.size).toBe(0);
    expect(d.ops()).toEqual([]);
  });

  it('fast path: sending deferred writes keeps each tablet\'s order and reports a failure after all settled', async () => {
    const log: string[] = [];
    await sendDeferred([w('a', 1, log), w('b', 2, log), w('a', 3, log), w('b', 4, log)]);
    expect(log.filter((x) => x.startsWith('a'))).toEqual(['a:1', 'a:3']);
    expect(log.filter((x) => x.startsWith('b'))).toEqual(['b:2', 'b:4']);
    const log2: string[] = [];
    await expect(sendDeferred([w('a', 1, log2, true), w('b', 2, log2)])).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect(log2.sort()).toEqual(['a:1', 'b:2']);
  });
});
