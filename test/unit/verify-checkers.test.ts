/**
 * The checkers on hand-built histories: each anomaly present is found, and clean histories pass.
 */
import { describe, expect, it } from 'vitest';
import { checkLinearizableRegisters, checkBank, checkSet, checkListAppend, type HistoryOp, type MicroOp } from '../../lab/verify';
import { contendedReads, RegisterWorkload } from '../../lab/verify/register-workload';
import { judge } from '../../lab/verify/verify-report';

class H {
  ops: HistoryOp[] = [];
  t = 0;
  private push(process: number, type: HistoryOp['type'], f: string, value: unknown, key?: string, time?: number): void {
    this.ops.push({ index: this.ops.length, process, type, f, value, time: time ?? ++this.t, ...(key !== undefined ? { key } : {}) });
  }
  inv(p: number, f: string, value: unknown, key?: string, time?: number): this {
    this.push(p, 'invoke', f, value, key, time);
    return this;
  }
  ok(p: number, f: string, value: unknown, key?: string, time?: number): this {
    this.push(p, 'ok', f, value, key, time);
    return this;
  }
  fail(p: number, f: string, value: unknown, key?: string): this {
    this.push(p, 'fail', f, value, key);
    return this;
  }
  info(p: number, f: string, value: unknown, key?: string): this {
    this.push(p, 'info', f, value, key);
    return this;
  }
  /** A whole transaction, invoked and completed back to back. */
  txn(p: number, mops: MicroOp[], type: 'ok' | 'fail' | 'info' = 'ok'): this {
    const inv = mops.map((m) => (m[0] === 'r' ? (['r', m[1], null] as MicroOp) : m));
    this.inv(p, 'txn', inv);
    if (type === 'ok') this.ok(p, 'txn', mops);
    else if (type === 'fail') this.fail(p, 'txn', inv);
    else this.info(p, 'txn', inv);
    return this;
  }
}

describe('verify: register linearizability', () => {
  it('register: sequential write then read of that value is linearizable', () => {
    const h = new H().inv(0, 'write', 1, 'k').ok(0, 'write', 1, 'k').inv(0, 'read', null, 'k').ok(0, 'read', 1, 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(true);
  });
  it('register: a stale read after a completed write is caught', () => {
    const h = new H().inv(0, 'write', 1, 'k').ok(0, 'write', 1, 'k').inv(0, 'write', 2, 'k').ok(0, 'write', 2, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 1, 'k');
    const r = checkLinearizableRegisters(h.ops);
    expect(r.valid).toBe(false);
    expect(r.failures[0]!.key).toBe('k');
  });
  it('register: concurrent write and read may see either value', () => {
    const h = new H().inv(0, 'write', 1, 'k').ok(0, 'write', 1, 'k').inv(0, 'write', 2, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 1, 'k').ok(0, 'write', 2, 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(true);
  });
  it('register: an info write may or may not have happened', () => {
    const took = new H().inv(0, 'write', 5, 'k').info(0, 'write', 5, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 5, 'k');
    const didnt = new H().inv(0, 'write', 5, 'k').info(0, 'write', 5, 'k').inv(1, 'read', null, 'k').ok(1, 'read', null, 'k');
    expect(checkLinearizableRegisters(took.ops).valid).toBe(true);
    expect(checkLinearizableRegisters(didnt.ops).valid).toBe(true);
  });
  it('register: a failed write must not be observed', () => {
    const h = new H().inv(0, 'write', 5, 'k').fail(0, 'write', 5, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 5, 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(false);
  });
  it('register: compare-and-set success and failure are both checked', () => {
    const good = new H().inv(0, 'write', 1, 'k').ok(0, 'write', 1, 'k').inv(0, 'cas', [1, 2], 'k').ok(0, 'cas', true, 'k').inv(1, 'cas', [1, 3], 'k').ok(1, 'cas', false, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 2, 'k');
    expect(checkLinearizableRegisters(good.ops).valid).toBe(true);
    const bad = new H().inv(0, 'write', 1, 'k').ok(0, 'write', 1, 'k').inv(0, 'cas', [1, 2], 'k').ok(0, 'cas', true, 'k').inv(1, 'cas', [1, 3], 'k').ok(1, 'cas', true, 'k');
    expect(checkLinearizableRegisters(bad.ops).valid).toBe(false);
  });
  it('register: cas-register anomaly — two concurrent cas swap from the same expected value', () => {
    // Both cas overlap in time, both claim to have swapped 1 away: only one of them can have seen 1.
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'cas', ['a', 'b'], 'k').inv(2, 'cas', ['a', 'c'], 'k').ok(1, 'cas', true, 'k').ok(2, 'cas', true, 'k');
    const r = checkLinearizableRegisters(h.ops);
    expect(r.valid).toBe(false);
    expect(r.failures[0]!.witness!.some((w) => w.role === 'blocked' && w.f === 'cas')).toBe(true);
  });
  it('register: cas-register anomaly — a read after a successful cas returns the value it replaced', () => {
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(0, 'cas', ['a', 'b'], 'k').ok(0, 'cas', true, 'k').inv(1, 'read', null, 'k').ok(1, 'read', 'a', 'k');
    const r = checkLinearizableRegisters(h.ops);
    expect(r.valid).toBe(false);
    const f = r.failures[0]!;
    // The excerpt names the read that cannot follow and the state the prefix left.
    expect(f.stuck).toMatchObject({ state: 'b', blockedIndex: 4 });
    expect(f.witness!.find((w) => w.role === 'blocked')).toMatchObject({ f: 'read', result: 'a' });
  });
  it('register: cas-register anomaly — a cas swaps from a value already overwritten', () => {
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(0, 'write', 'b', 'k').ok(0, 'write', 'b', 'k').inv(1, 'cas', ['a', 'c'], 'k').ok(1, 'cas', true, 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(false);
  });
  it('register: cas-register anomaly — a read returns the new value of a cas whose expected value never held', () => {
    // The cas failed for real (fail = it did not happen): its value must never be read.
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'cas', ['zz', 'b'], 'k').info(1, 'cas', ['zz', 'b'], 'k').inv(2, 'read', null, 'k').ok(2, 'read', 'b', 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(false);
  });
  it('register: a read concurrent with a cas may see the old or the new value', () => {
    const old = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(0, 'cas', ['a', 'b'], 'k').inv(1, 'read', null, 'k').ok(1, 'read', 'a', 'k').ok(0, 'cas', true, 'k');
    const neu = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(0, 'cas', ['a', 'b'], 'k').inv(1, 'read', null, 'k').ok(1, 'read', 'b', 'k').ok(0, 'cas', true, 'k');
    expect(checkLinearizableRegisters(old.ops).valid).toBe(true);
    expect(checkLinearizableRegisters(neu.ops).valid).toBe(true);
  });
  it('register: a cas of unknown outcome (info) may or may not have swapped, but not both', () => {
    const base = (): H => new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'cas', ['a', 'b'], 'k').info(1, 'cas', ['a', 'b'], 'k');
    expect(checkLinearizableRegisters(base().inv(2, 'read', null, 'k').ok(2, 'read', 'b', 'k').ops).valid).toBe(true);
    expect(checkLinearizableRegisters(base().inv(2, 'read', null, 'k').ok(2, 'read', 'a', 'k').ops).valid).toBe(true);
    expect(checkLinearizableRegisters(base().inv(2, 'read', null, 'k').ok(2, 'read', 'b', 'k').inv(2, 'read', null, 'k').ok(2, 'read', 'a', 'k').ops).valid).toBe(false);
  });
  it('register: a cas that did not swap (fail) has no effect; as (ok, false) it needs a different value', () => {
    const failed = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'cas', ['x', 'b'], 'k').fail(1, 'cas', ['x', 'b'], 'k').inv(2, 'read', null, 'k').ok(2, 'read', 'a', 'k');
    expect(checkLinearizableRegisters(failed.ops).valid).toBe(true);
    const falseButEqual = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'cas', ['a', 'b'], 'k').ok(1, 'cas', false, 'k');
    expect(checkLinearizableRegisters(falseButEqual.ops).valid).toBe(false);
  });
  it('register: an unobserved info write is kept when a not-swapped cas may need it', () => {
    // cas(a→c) answered "not swapped" after write a: only the info write b can explain it.
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k').inv(1, 'write', 'b', 'k').info(1, 'write', 'b', 'k').inv(2, 'cas', ['a', 'c'], 'k').ok(2, 'cas', false, 'k');
    expect(checkLinearizableRegisters(h.ops).valid).toBe(true);
  });
  it('register: many info cas of unobserved values keep the search small', () => {
    const h = new H().inv(0, 'write', 'a', 'k').ok(0, 'write', 'a', 'k');
    for (let p = 1; p <= 40; p++) h.inv(p, 'cas', ['a', `n${p}`], 'k');
    for (let p = 1; p <= 40; p++) h.info(p, 'cas', ['a', `n${p}`], 'k');
    h.inv(100, 'read', null, 'k').ok(100, 'read', 'a', 'k').inv(100, 'cas', ['a', 'z'], 'k').ok(100, 'cas', true, 'k').inv(100, 'read', null, 'k').ok(100, 'read', 'z', 'k');
    expect(checkLinearizableRegisters(h.ops, 20_000).valid).toBe(true);
  });
  it('register: random concurrent histories produced by a real register pass; a corrupted read fails', () => {
    // A seeded simulation: operations take effect at a random instant inside their [invoke, ok]
    // interval on a real register, so every such history is linearizable by construction.
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 30; round++) {
      type Ev = { t: number; kind: 'inv' | 'eff' | 'ok'; p: number; f: string; v: unknown };
      const evs: Ev[] = [];
      let n = 0;
      for (let p = 0; p < 4; p++) {
        let t = rnd(5);
        for (let i = 0; i < 6; i++) {
          const f = ['read', 'write', 'cas'][rnd(3)]!;
          const t0 = t;
          const eff = t0 + 1 + rnd(10);
          const t1 = eff + 1 + rnd(10);
          const v = f === 'write' ? `w${n++}` : f === 'cas' ? [rnd(2) ? 'w0' : null, `c${n++}`] : null;
          evs.push({ t: t0, kind: 'inv', p, f, v }, { t: eff, kind: 'eff', p, f, v }, { t: t1, kind: 'ok', p, f, v });
          t = t1 + 1;
        }
      }
      const order = { inv: 0, eff: 1, ok: 2 };
      evs.sort((a, b) => a.t - b.t || order[a.kind] - order[b.kind]);
      let state: unknown = null;
      const result = new Map<number, unknown>();
      const h = new H();
      for (const e of evs) {
        if (e.kind === 'inv') h.inv(e.p, e.f, e.v, 'k', e.t);
        else if (e.kind === 'eff') {
          if (e.f === 'write') state = e.v;
          else if (e.f === 'read') result.set(e.p, state);
          else {
            const [exp, nv] = e.v as [unknown, unknown];
            result.set(e.p, state === exp);
            if (state === exp) state = nv;
          }
        } else if (e.f === 'write') h.ok(e.p, 'write', e.v, 'k', e.t);
        else if (e.f === 'read') h.ok(e.p, 'read', result.get(e.p), 'k', e.t);
        else if (result.get(e.p)) h.ok(e.p, 'cas', true, 'k', e.t);
        else h.fail(e.p, 'cas', e.v, 'k');
      }
      expect(checkLinearizableRegisters(h.ops).valid).toBe(true);
      // A read of a value never written cannot be explained.
      const reads = h.ops.filter((o) => o.type === 'ok' && o.f === 'read');
      if (reads.length === 0) continue;
      const target = reads[rnd(reads.length)];
      const bad = h.ops.map((o) => (o === target ? { ...o, value: 'never-written' } : o));
      expect(checkLinearizableRegisters(bad).valid).toBe(false);
    }
  });
  it('register: keys are checked independently', () => {
    const h = new H().inv(0, 'write', 1, 'a').ok(0, 'write', 1, 'a').inv(0, 'read', null, 'b').ok(0, 'read', 1, 'b');
    const r = checkLinearizableRegisters(h.ops);
    expect(r.keys).toBe(2);
    expect(r.failures.map((f) => f.key)).toEqual(['b']);
  });
});

describe('verify: register non-vacuity', () => {
  it('register: a history whose reads never overlap a write of their key counts as vacuous, not valid; overlapping reads make it count', () => {
    const w = new RegisterWorkload();
    const serial = new H();
    for (let i = 0; i < 600; i++) serial.inv(0, 'write', `v${i}`, 'k').ok(0, 'write', `v${i}`, 'k').inv(1, 'read', null, 'k').ok(1, 'read', `v${i}`, 'k');
    expect(contendedReads(serial.ops)).toBe(0);
    const v1 = w.check(serial.ops);
    expect(v1.valid).toBe(true);
    const r1 = judge('register', serial.ops, [{ kind: 'kill', target: 'tserver 0', startNs: 0, endNs: 1 }], v1, 1, 1000);
    expect(r1.verdict).toBe('vacuous');
    expect(r1.why).toMatch(/concurrently with a write/);
    const busy = new H();
    for (let i = 0; i < 600; i++) busy.inv(0, 'write', `v${i}`, 'k').inv(1, 'read', null, 'k').ok(1, 'read', i === 0 ? null : `v${i - 1}`, 'k').ok(0, 'write', `v${i}`, 'k');
    expect(contendedReads(busy.ops)).toBe(600);
    const r2 = judge('register', busy.ops, [{ kind: 'kill', target: 'tserver 0', startNs: 0, endNs: 1 }], w.check(busy.ops), 1, 1000);
    expect(r2.verdict).toBe('valid');
  });
});

describe('verify: bank', () => {
  const accounts = ['a', 'b'];
  it('bank: reads summing to the total pass', () => {
    const h = new H().inv(0, 'read', null).ok(0, 'read', { a: 60, b: 40 }).inv(1, 'transfer', { from: 'a', to: 'b', amount: 10 }).ok(1, 'transfer', null);
    const r = checkBank(h.ops, { total: 100, accounts });
    expect(r.valid).toBe(true);
    expect(r.reads).toBe(1);
    expect(r.transfersOk).toBe(1);
  });
  it('bank: a wrong total and a negative balance are caught', () => {
    const h = new H().inv(0, 'read', null).ok(0, 'read', { a: 70, b: 40 }).inv(0, 'read', null).ok(0, 'read', { a: 110, b: -10 });
    const r = checkBank(h.ops, { total: 100, accounts });
    expect(r.valid).toBe(false);
    expect(r.wrongTotal).toHaveLength(1);
    expect(r.negative).toEqual([{ index: 3, account: 'b', balance: -10 }]);
  });
});

describe('verify: set', () => {
  it('set: lost and unexpected elements are found; info adds may appear', () => {
    const h = new H().inv(0, 'add', 1).ok(0, 'add', null).inv(0, 'add', 2).ok(0, 'add', null).inv(1, 'add', 3).info(1, 'add', null).inv(2, 'read', null).ok(2, 'read', [1, 3, 9]);
    const r = checkSet(h.ops);
    expect(r.valid).toBe(false);
    expect(r.lost).toEqual([2]);
    expect(r.unexpected).toEqual([9]);
    expect(r.recovered).toBe(1);
  });
  it('set: every acknowledged add present passes', () => {
    const h = new H().inv(0, 'add', 1).ok(0, 'add', null).inv(1, 'read', null).ok(1, 'read', [1]);
    expect(checkSet(h.ops).valid).toBe(true);
  });
  it('set: no final read is not a pass', () => {
    expect(checkSet(new H().inv(0, 'add', 1).ok(0, 'add', null).ops).valid).toBe(false);
  });
});

describe('verify: list-append (Elle-style)', () => {
  it('append: a serial history has no anomalies', () => {
    const h = new H()
      .txn(0, [['append', 'x', 1], ['r', 'x', [1]]])
      .txn(1, [['r', 'x', [1]], ['append', 'x', 2]])
      .txn(0, [['r', 'x', [1, 2]]]);
    const r = checkListAppend(h.ops);
    expect(r.anomalies).toEqual({});
    expect(r.valid).toBe(true);
  });
  it('append: G0 (write cycle) is found', () => {
    // T0 appends x=1, y=2; T1 appends x=2, y=1; reads show x:[1,2] but y:[1,2] → T0<T1 on x, T1<T0 on y.
    const h = new H()
      .txn(0, [['append', 'x', 1], ['append', 'y', 2]])
      .txn(1, [['append', 'x', 2], ['append', 'y', 1]])
      .txn(2, [['r', 'x', [1, 2]], ['r', 'y', [1, 2]]]);
    const r = checkListAppend(h.ops);
    expect(r.anomalies.G0).toBeDefined();
    expect(r.valid).toBe(false);
  });
  it('append: G1a (aborted read) is found', () => {
    const h = new H().txn(0, [['append', 'x', 1]], 'fail').txn(1, [['r', 'x', [1]]]);
    expect(checkListAppend(h.ops).anomalies.G1a).toHaveLength(1);
  });
  it('append: G1b (intermediate read) is found', () => {
    const h = new H().txn(0, [['append', 'x', 1], ['append', 'x', 2]]).txn(1, [['r', 'x', [1]]]);
    expect(checkListAppend(h.ops).anomalies.G1b).toHaveLength(1);
  });
  it('append: G1c (circular information flow) is found', () => {
    // T0 reads y=[1] (written by T1) and appends x=1; T1 reads x=[1] (written by T0) and appends y=1.
    const h = new H().txn(0, [['r', 'y', [1]], ['append', 'x', 1]]).txn(1, [['r', 'x', [1]], ['append', 'y', 1]]);
    const r = checkListAppend(h.ops);
    expect(r.anomalies.G1c).toBeDefined();
    expect(r.valid).toBe(false);
  });
  it('append: lost update / G-single is found and fails snapshot isolation', () => {
    // Both read x=[] and both append: one append must have been lost to the other's read.
    const h = new H()
      .txn(0, [['r', 'x', []], ['append', 'x', 1]])
      .txn(1, [['r', 'x', []], ['append', 'x', 2]])
      .txn(2, [['r', 'x', [1, 2]]]);
    const r = checkListAppend(h.ops);
    expect(r.anomalies['lost-update']).toBeDefined();
    expect(r.anomalies['G-single']).toBeDefined();
    expect(r.valid).toBe(false);
  });
  it('append: write skew (G2-item) is allowed under snapshot isolation, not serializable', () => {
    // T0 reads x=[], y=[] and appends x; T1 reads x=[], y=[] and appends y: two rw edges.
    const h = new H()
      .txn(0, [['r', 'x', []], ['r', 'y', []], ['append', 'x', 1]])
      .txn(1, [['r', 'x', []], ['r', 'y', []], ['append', 'y', 1]])
      .txn(2, [['r', 'x', [1]], ['r', 'y', [1]]]);
    const si = checkListAppend(h.ops, 'snapshot-isolation');
    expect(si.anomalies['G2-item']).toBeDefined();
    expect(si.anomalies['G-single']).toBeUndefined();
    expect(si.allowed).toEqual(['G2-item']);
    expect(si.valid).toBe(true);
    expect(checkListAppend(h.ops, 'serializable').valid).toBe(false);
  });
  it('append: internal inconsistency (own append not visible) is found', () => {
    const h = new H().txn(0, [['append', 'x', 1], ['r', 'x', []]]);
    expect(checkListAppend(h.ops).anomalies.internal).toHaveLength(1);
  });
  it('append: incompatible orders and duplicates are found', () => {
    const h = new H()
      .txn(0, [['append', 'x', 1]])
      .txn(1, [['append', 'x', 2]])
      .txn(2, [['r', 'x', [1, 2]]])
      .txn(3, [['r', 'x', [2, 1, 1]]]);
    const r = checkListAppend(h.ops);
    expect(r.anomalies['incompatible-order']).toBeDefined();
    expect(r.anomalies['duplicate-elements']).toBeDefined();
  });
});
