import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { TxnLocks } from '../../docdb/txn-locks';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('TxnLocks: one holder per transaction id, callers of an id in arrival order', () => {
  it('never lets two holders of the same id overlap, and serves every id in arrival order, whatever the mix of ids', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ ids: fc.uniqueArray(fc.nat(5), { minLength: 1, maxLength: 4 }), hold: fc.nat(2) }), { minLength: 1, maxLength: 30 }),
        async (callers) => {
          const locks = new TxnLocks();
          const holding = new Set<number>();
          const served = new Map<number, number[]>(); // id → callers in the order they held it
          await Promise.all(
            callers.map((c, i) =>
              locks.runMany(
                c.ids.map((n) => TxnId(`t${n}`)),
                async () => {
                  for (const n of c.ids) {
                    expect(holding.has(n)).toBe(false);
                    holding.add(n);
                    served.set(n, [...(served.get(n) ?? []), i]);
                  }
                  for (let k = 0; k < c.hold; k++) await tick();
                  for (const n of c.ids) holding.delete(n);
                },
              ),
            ),
          );
          for (const [n, order] of served) {
            const arrived = callers.flatMap((c, i) => (c.ids.includes(n) ? [i] : []));
            expect(order).toEqual(arrived);
          }
          expect(locks.size).toBe(0);
        },
      ),
      { numRuns: 100, seed: 9 },
    );
  });

  it('a failing holder releases its ids, and the error reaches its caller only', async () => {
    const locks = new TxnLocks();
    const a = TxnId('a');
    const first = locks.run(a, () => Promise.reject(new Error('boom')));
    const second = locks.runMany([a, TxnId('b')], () => Promise.resolve('ok'));
    await expect(first).rejects.toThrow('boom');
    await expect(second).resolves.toBe('ok');
    expect(locks.size).toBe(0);
  });

  it('duplicate ids in one call take the lock once', async () => {
    const locks = new TxnLocks();
    const a = TxnId('a');
    await expect(locks.runMany([a, a, a], () => Promise.resolve(1))).resolves.toBe(1);
    expect(locks.size).toBe(0);
  });
});
