import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OldestKeys } from '../../common/oldest-keys';

type Step = { op: 'set'; k: number } | { op: 'reinsert'; k: number } | { op: 'delete'; k: number } | { op: 'evict' } | { op: 'clear' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.nat(60).map((k) => ({ op: 'set' as const, k })) },
  { weight: 2, arbitrary: fc.nat(60).map((k) => ({ op: 'reinsert' as const, k })) },
  { weight: 2, arbitrary: fc.nat(60).map((k) => ({ op: 'delete' as const, k })) },
  { weight: 5, arbitrary: fc.constant({ op: 'evict' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
);

describe('OldestKeys: the oldest key of an insertion-ordered Map, with one iterator kept across calls', () => {
  it('gives what a fresh keys().next() would, through inserts, re-inserts, deletes, evictions and clears', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 200, maxLength: 2000 }), (steps) => {
        const m = new Map<number, number>();
        const oldest = new OldestKeys(m);
        for (const s of steps) {
          if (s.op === 'set') m.set(s.k, s.k);
          else if (s.op === 'reinsert') {
            m.delete(s.k);
            m.set(s.k, s.k);
          } else if (s.op === 'delete') m.delete(s.k);
          else if (s.op === 'clear') m.clear();
          else {
            const expected = m.keys().next();
            const got = oldest.take();
            expect(got).toBe(expected.done === true ? undefined : expected.value);
            if (got !== undefined) m.delete(got);
          }
        }
      }),
      { numRuns: 60, seed: 77 },
    );
  });

  it('after the map empties and fills again, gives the new oldest key', () => {
    const m = new Map<string, number>([['a', 1]]);
    const oldest = new OldestKeys(m);
    expect(oldest.take()).toBe('a');
    m.delete('a');
    expect(oldest.take()).toBeUndefined();
    m.set('b', 2);
    m.set('c', 3);
    expect(oldest.take()).toBe('b');
  });
});
