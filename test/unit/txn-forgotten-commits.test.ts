/**
 * ForgottenCommits, the status tablet replica's memory that makes "no record" definite: its one
 * safety property, checked on random histories — a transaction that committed and was forgotten is
 * never reported "never committed", whatever the bound dropped and wherever the memory (re)started.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { ForgottenCommits } from '../../tserver/transaction/forgotten-commits';

describe('ForgottenCommits', () => {
  it('forgotten-commits: a committed and forgotten transaction is never "never committed" (random histories, bounds and restarts)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        // Each step: transactions starting, then a FORGOTTEN entry of some of the started ones, or a restart of the memory.
        fc.array(fc.record({ starts: fc.integer({ min: 0, max: 3 }), forget: fc.integer({ min: 0, max: 4 }), restart: fc.boolean(), otherEntry: fc.boolean() }), { maxLength: 60 }),
        (max, steps) => {
          const m = new ForgottenCommits(max);
          let ht = 1n;
          const started: Array<{ id: TxnId; startHt: HybridTime }> = [];
          const forgotten: Array<{ id: TxnId; startHt: HybridTime; commitHt: HybridTime }> = [];
          let n = 0;
          for (const s of steps) {
            if (s.restart) m.reset();
            for (let i = 0; i < s.starts; i++) started.push({ id: TxnId(`t${n++}`), startHt: ht++ });
            if (s.otherEntry) m.observe(ht++); // a PENDING/COMMITTED/ABORTED entry
            const batch = started.splice(0, s.forget).map((b) => ({ ...b, commitHt: b.startHt + 1n }));
            if (batch.length > 0) {
              m.remember(ht++, batch.map((b) => ({ txnId: b.id, commitHt: b.commitHt })));
              forgotten.push(...batch);
            }
            for (const f of forgotten) {
              expect(m.neverCommitted(f.id, f.startHt), `${f.id} committed and was forgotten`).toBe(false);
              // Told COMMITTED only with its own commit time, while remembered.
              expect([undefined, f.commitHt]).toContain(m.committedAt(f.id));
            }
            expect(m.stats().remembered).toBeLessThanOrEqual(max + 4);
          }
          // Ids nobody forgot, started after everything seen, are provably never committed once the memory has a boundary.
          if (m.stats().boundaryHt !== undefined) expect(m.neverCommitted(TxnId('fresh'), ht + 1n)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('forgotten-commits: nothing is definite until the first entry after a (re)start fixes the boundary', () => {
    const m = new ForgottenCommits();
    expect(m.neverCommitted(TxnId('a'), 100n)).toBe(false);
    m.observe(50n);
    expect(m.neverCommitted(TxnId('a'), 100n)).toBe(true);
    expect(m.neverCommitted(TxnId('a'), 49n)).toBe(false); // started before the boundary
    m.remember(60n, [{ txnId: TxnId('a'), commitHt: 0n }]);
    expect(m.neverCommitted(TxnId('a'), 100n)).toBe(false);
    expect(m.committedAt(TxnId('a'))).toBeUndefined(); // no record was there: not known COMMITTED
    m.remember(70n, [{ txnId: TxnId('c'), commitHt: 65n }]);
    expect(m.committedAt(TxnId('c'))).toBe(65n);
    m.reset();
    expect(m.neverCommitted(TxnId('b'), 1000n)).toBe(false);
    expect(m.committedAt(TxnId('c'))).toBeUndefined();
    expect(m.stats()).toEqual({ remembered: 0, boundaryHt: undefined, uncovered: 3 });
  });
});
