import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { OUTCOME_LIMITS, OutcomeMemory } from '../../tserver/tablet/outcome-memory';

const committed = (ht: bigint) => ({ status: 'COMMITTED' as const, commitHt: ht, priority: 0 });
const aborted = { status: 'ABORTED' as const, priority: 0 };
const id = (n: number) => TxnId(`t-${n}`);

function memory(limits = { max: 3, hardMax: 6, keepMs: 1000 }) {
  const clock = { now: 0 };
  return { m: new OutcomeMemory(limits, () => clock.now), clock };
}

describe('OutcomeMemory: what a replica remembers of applied and removed transactions', () => {
  it('answers what it was told, the latest word winning', () => {
    const { m } = memory();
    m.remember(id(1), committed(5n));
    m.remember(id(2), aborted);
    expect(m.get(id(1))).toMatchObject({ status: 'COMMITTED', commitHt: 5n });
    expect(m.get(id(2))).toMatchObject({ status: 'ABORTED' });
    expect(m.get(id(3))).toBeUndefined();
    m.remember(id(2), committed(9n));
    expect(m.get(id(2))).toMatchObject({ status: 'COMMITTED', commitHt: 9n });
    expect(m.size).toBe(2);
  });

  it('beyond max keeps outcomes younger than keepMs (a reader may still ask), then evicts the oldest', () => {
    const { m, clock } = memory();
    for (let i = 1; i <= 5; i++) m.remember(id(i), committed(BigInt(i)));
    expect(m.size).toBe(5); // all within keepMs
    clock.now = 1500; // all five are now older than keepMs
    m.remember(id(6), committed(6n));
    expect(m.size).toBe(3); // back to max: the oldest went
    expect([1, 2, 3].map((i) => m.get(id(i)))).toEqual([undefined, undefined, undefined]);
    expect(m.get(id(4))).toBeDefined();
    expect(m.get(id(5))).toBeDefined();
    expect(m.get(id(6))).toBeDefined();
  });

  it('beyond hardMax evicts the oldest however young', () => {
    const { m } = memory();
    for (let i = 1; i <= 10; i++) m.remember(id(i), aborted);
    expect(m.size).toBe(6);
    expect(m.get(id(4))).toBeUndefined();
    expect(m.get(id(5))).toBeDefined();
    expect(m.get(id(10))).toBeDefined();
  });

  it('remembering again makes an outcome the newest: it outlives those told after it first', () => {
    const { m, clock } = memory();
    m.remember(id(1), committed(1n));
    m.remember(id(2), committed(2n));
    m.remember(id(3), committed(3n));
    clock.now = 900;
    m.remember(id(1), committed(1n)); // refreshed at 900
    clock.now = 1500; // 2 and 3 are old, 1 is 600 ms old
    m.remember(id(4), committed(4n));
    m.remember(id(5), committed(5n));
    expect(m.get(id(2))).toBeUndefined();
    expect(m.get(id(3))).toBeUndefined();
    expect(m.get(id(1))).toBeDefined();
    expect(m.size).toBe(3);
  });

  it('the defaults: 10,000 kept, up to 200,000 within a minute', () => {
    expect(OUTCOME_LIMITS).toEqual({ max: 10_000, hardMax: 200_000, keepMs: 60_000 });
  });

  it('matches a plain model over long runs of remembers, re-remembers and clock steps (its eviction queue compacts)', () => {
    // The model: a list in remember order, oldest first; remembering again moves an id to the end;
    // beyond max the oldest goes once older than keepMs, beyond hardMax however young.
    const limits = { max: 20, hardMax: 60, keepMs: 50 };
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(fc.nat(50), fc.nat(100_000)), fc.nat(5)), { minLength: 1500, maxLength: 3000 }), (steps) => {
        const { m, clock } = memory(limits);
        let model: Array<{ id: number; at: number }> = [];
        for (const [n, dt] of steps) {
          clock.now += dt;
          m.remember(id(n), committed(BigInt(n)));
          model = model.filter((e) => e.id !== n);
          model.push({ id: n, at: clock.now });
          while (model.length > limits.max) {
            if (model.length <= limits.hardMax && clock.now - model[0]!.at < limits.keepMs) break;
            model.shift();
          }
          expect(m.size).toBe(model.length);
        }
        for (const e of model) expect(m.get(id(e.id))).toMatchObject({ commitHt: BigInt(e.id) });
      }),
      { numRuns: 15, seed: 4242 },
    );
  });
});
