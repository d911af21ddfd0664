/**
 * The register checker (WGL search with forced state-preserving operations, one memo state for every
 * unobserved value, earliest-deadline-first order) against a brute-force oracle: every order of the
 * operations that respects real time, info operations placed anywhere after their invocation or left
 * out. Random small histories — valid and not, with info and fail completions, cas that did and did
 * not swap, and values written twice — must get the same verdict from both.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Call } from '../../lab/verify/history';
import { checkRegisterKey, type RegValue } from '../../lab/verify/linearizability';

/** Does a sequential register explain `order`? Written from the register's rules, not the checker's. */
function step(state: RegValue, c: Call): RegValue | undefined {
  if (c.f === 'write') return c.invokeValue as RegValue;
  if (c.f === 'read') return (c.value ?? null) === state ? state : undefined;
  const [expected, nv] = c.invokeValue as [RegValue, RegValue];
  if (c.type === 'info') return state === expected ? nv : state;
  if (c.value === true) return state === expected ? nv : undefined;
  return state !== expected ? state : undefined;
}

function bruteForce(calls: readonly Call[]): boolean {
  const ops = calls.filter((c) => c.type !== 'fail' && !(c.type === 'info' && c.f === 'read'));
  const placed = new Array<boolean>(ops.length).fill(false);
  const seen = new Set<string>();
  const go = (state: RegValue): boolean => {
    const pendingRequired = ops.filter((c, i) => !placed[i] && c.type === 'ok');
    if (pendingRequired.length === 0) return true;
    const memo = `${placed.map((p) => (p ? 1 : 0)).join('')}|${JSON.stringify(state)}`;
    if (seen.has(memo)) return false;
    seen.add(memo);
    for (let i = 0; i < ops.length; i++) {
      if (placed[i]) continue;
      const c = ops[i]!;
      // Real time: nothing still unplaced may have completed before c was invoked.
      if (pendingRequired.some((p) => p.completeTime < c.invokeTime)) continue;
      const next = step(state, c);
      if (next === undefined) continue;
      placed[i] = true;
      const ok = go(next);
      placed[i] = false;
      if (ok) return true;
    }
    return false;
  };
  return go(null);
}

const VALUES = ['a', 'b', 'c', 'd'];

const callArb = (process: number): fc.Arbitrary<Call> =>
  fc
    .record({
      f: fc.constantFrom('read', 'write', 'cas'),
      start: fc.integer({ min: 0, max: 30 }),
      len: fc.integer({ min: 0, max: 12 }),
      type: fc.constantFrom<Call['type']>('ok', 'ok', 'ok', 'info', 'fail'),
      v: fc.constantFrom(...VALUES),
      v2: fc.constantFrom(...VALUES),
      readNull: fc.boolean(),
      swapped: fc.boolean(),
    })
    .map((r) => {
      const invokeValue = r.f === 'write' ? r.v : r.f === 'cas' ? [r.readNull ? null : r.v, r.v2] : null;
      const value = r.f === 'read' ? (r.readNull ? null : r.v) : r.f === 'cas' ? r.swapped : r.v;
      return {
        process,
        f: r.f,
        key: 'k',
        invokeValue,
        invokeTime: r.start,
        type: r.type,
        value: r.type === 'ok' ? value : undefined,
        completeTime: r.type === 'info' ? Infinity : r.start + r.len,
        invokeIndex: 0,
      };
    });

const historyArb = fc
  .array(fc.nat(), { minLength: 1, maxLength: 8 })
  .chain((xs) => fc.tuple(...xs.map((_, i) => callArb(i))))
  .map((calls) => calls.sort((a, b) => a.invokeTime - b.invokeTime).map((c, i) => ({ ...c, invokeIndex: i })));

describe('register checker against a brute-force oracle', () => {
  it('agrees on random small histories (valid and not)', () => {
    let valid = 0;
    let invalid = 0;
    fc.assert(
      fc.property(historyArb, (calls) => {
        const want = bruteForce(calls);
        const got = checkRegisterKey('k', calls, 1_000_000).valid;
        if (want) valid++;
        else invalid++;
        expect(got).toBe(want);
      }),
      { numRuns: 4000 },
    );
    // Both verdicts must have been exercised, or the comparison says little.
    expect(valid).toBeGreaterThan(200);
    expect(invalid).toBeGreaterThan(200);
  });
});

describe('register checker on a fault-sized window', () => {
  it('decides stalls of ~140 overlapping operations with late-seen info writes within a small bound', () => {
    // A real register; 24 processes whose operations overlap a long stall (each takes effect at a
    // random instant of its interval), a third of the writes never answer (info) yet took effect and
    // are read later — the shape of a tserver pause under load. Linearizable by construction. (Round
    // 2 took the plain WGL search over 1,000,000 steps.)
    let seed = 99;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 5; round++) {
      type Ev = { t: number; kind: 'eff' | 'inv'; c: Call };
      const evs: Ev[] = [];
      let n = 0;
      for (let p = 0; p < 24; p++) {
        let t = rnd(20);
        for (let i = 0; i < 6; i++) {
          const f = rnd(2) === 0 ? 'read' : 'write';
          const inv = t;
          const eff = inv + 1 + rnd(300);
          const done = eff + 1 + rnd(300);
          const info = f === 'write' && rnd(3) === 0;
          const c: Call = { process: p, f, key: 'k', invokeValue: f === 'write' ? `v${n++}` : null, invokeTime: inv, type: info ? 'info' : 'ok', value: undefined, completeTime: info ? Infinity : done, invokeIndex: 0 };
          evs.push({ t: inv, kind: 'inv', c }, { t: eff, kind: 'eff', c });
          if (info) break; // the process retires after an unknown outcome
          t = done + 1;
        }
      }
      evs.sort((a, b) => a.t - b.t || (a.kind === b.kind ? 0 : a.kind === 'inv' ? -1 : 1));
      let state: RegValue = null;
      for (const e of evs) {
        if (e.kind !== 'eff') continue;
        if (e.c.f === 'write') {
          state = e.c.invokeValue as RegValue;
          e.c.value = state;
        } else e.c.value = state;
      }
      const calls = evs.filter((e) => e.kind === 'inv').map((e, i) => ({ ...e.c, invokeIndex: i }));
      expect(calls.length).toBeGreaterThanOrEqual(130);
      expect(checkRegisterKey('k', calls, 20_000).valid).toBe(true);
      // And a stale read among them is found, not left unknown.
      const late = calls.filter((c) => c.f === 'read' && c.type === 'ok' && c.value !== null);
      const victim = late[late.length - 1]!;
      const first = calls.find((c) => c.f === 'write' && c.type === 'ok' && c.completeTime < victim.invokeTime && calls.some((w) => w.f === 'write' && w.type === 'ok' && w.invokeTime > c.completeTime && w.completeTime < victim.invokeTime));
      if (!first) continue;
      const bad = calls.map((c) => (c === victim ? { ...c, value: first.invokeValue } : c));
      expect(checkRegisterKey('k', bad, 200_000).valid).toBe(false);
    }
  });
});
