import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { buildSchedule, DEFAULT_MAX_CLOCK_SKEW_MS, parseNemesisKinds } from '../../lab/verify/nemesis-schedule';
import { checkRegisterKey } from '../../lab/verify/linearizability';
import { failReasons, pairCalls, reasonOf, type HistoryOp } from '../../lab/verify/history';
import { historyCounts, judge, markdownReport, MIN_OK_OPS, unavailability, verdictLine } from '../../lab/verify/verify-report';
import { completionOfError } from '../../lab/verify/workload';
import type { FaultWindow } from '../../lab/verify/nemesis';

function op(index: number, process: number, type: HistoryOp['type'], f: string, value: unknown, timeMs: number, key = 'k'): HistoryOp {
  return { index, process, type, f, value, time: timeMs * 1e6, key };
}

describe('verify: nemesis schedule', () => {
  it('verify: the same seed gives the same fault schedule, another seed a different one', () => {
    const o = { kinds: parseNemesisKinds('kill,pause,partition,skew,stepdown'), timeMs: 60_000, tservers: 3 };
    const a = buildSchedule({ ...o, seed: 7 });
    expect(buildSchedule({ ...o, seed: 7 })).toEqual(a);
    expect(buildSchedule({ ...o, seed: 8 })).not.toEqual(a);
    expect(a.length).toBeGreaterThan(3);
  });

  it('verify: a bridge cuts its target from another node (never itself), and only when named (not part of all)', () => {
    for (const tservers of [3, 5]) {
      const s = buildSchedule({ seed: 9, kinds: ['bridge'], timeMs: 120_000, tservers });
      expect(s.length).toBeGreaterThan(5);
      for (const f of s) {
        expect(f.kind).toBe('bridge');
        expect(f.peerOffset).toBeGreaterThanOrEqual(1);
        expect(f.peerOffset).toBeLessThanOrEqual(tservers - 1);
      }
      expect(new Set(s.map((f) => f.peerOffset)).size).toBe(tservers - 1);
    }
    expect(parseNemesisKinds('all')).not.toContain('bridge');
    expect(parseNemesisKinds('all,bridge')).toContain('bridge');
  });

  it('verify: a rebuild hits a replica of the workload table or of a status tablet, on a tserver or a leader; only when named', () => {
    const s = buildSchedule({ seed: 11, kinds: ['rebuild'], timeMs: 300_000, tservers: 3 });
    expect(s.length).toBeGreaterThan(20);
    expect(s.every((f) => f.kind === 'rebuild' && typeof f.statusTablet === 'boolean')).toBe(true);
    expect(new Set(s.map((f) => f.statusTablet))).toEqual(new Set([true, false]));
    expect(new Set(s.map((f) => f.target.role))).toEqual(new Set(['tserver', 'leader']));
    expect(parseNemesisKinds('all')).not.toContain('rebuild');
  });

  it('verify: fault windows never overlap and end before the recovery tail', () => {
    const s = buildSchedule({ seed: 3, kinds: ['kill', 'partition'], timeMs: 30_000, tservers: 3, tailMs: 2_000 });
    for (let i = 1; i < s.length; i++) expect(s[i]!.startMs).toBeGreaterThanOrEqual(s[i - 1]!.startMs + s[i - 1]!.durationMs);
    for (const f of s) expect(f.startMs + f.durationMs).toBeLessThanOrEqual(28_000);
  });

  it('verify: skew stays within max_clock_skew_usec; skew-beyond is a separate, named nemesis past it', () => {
    const within = buildSchedule({ seed: 5, kinds: ['skew'], timeMs: 120_000, tservers: 3 });
    expect(within.length).toBeGreaterThan(5);
    expect(within.every((f) => f.kind === 'skew' && Math.abs(f.skewMs ?? 0) <= DEFAULT_MAX_CLOCK_SKEW_MS / 2)).toBe(true);
    const beyond = buildSchedule({ seed: 5, kinds: ['skew-beyond'], timeMs: 120_000, tservers: 3 });
    expect(beyond.every((f) => f.kind === 'skew-beyond' && Math.abs(f.skewMs ?? 0) > DEFAULT_MAX_CLOCK_SKEW_MS)).toBe(true);
    // The older spelling (--skew_beyond) adds skew-beyond windows beside the safe ones.
    const both = buildSchedule({ seed: 5, kinds: ['skew'], timeMs: 120_000, tservers: 3, skewBeyond: true });
    expect(new Set(both.map((f) => f.kind))).toEqual(new Set(['skew', 'skew-beyond']));
    // The bound follows the cluster's max_clock_skew_usec.
    const small = buildSchedule({ seed: 5, kinds: ['skew', 'skew-beyond'], timeMs: 120_000, tservers: 3, maxClockSkewMs: 100 });
    for (const f of small) expect(f.kind === 'skew' ? Math.abs(f.skewMs!) <= 50 : Math.abs(f.skewMs!) > 100).toBe(true);
  });

  it('verify: all means the safe nemeses and splits; skew-beyond must be named', () => {
    expect(parseNemesisKinds('all')).not.toContain('skew-beyond');
    expect(parseNemesisKinds('all')).toContain('skew');
    expect(parseNemesisKinds('all')).toContain('split');
    expect(parseNemesisKinds('kill,skew-beyond')).toEqual(['kill', 'skew-beyond']);
  });

  it('verify: an unknown nemesis name is refused', () => {
    expect(() => parseNemesisKinds('kill,flood')).toThrow(/unknown nemesis 'flood'/);
  });
});

describe('verify: completions and verdicts', () => {
  it('verify: an erring read is fail, an erring write is info unless the code proves it was refused', () => {
    expect(completionOfError(new DbError(ErrorCode.TIMED_OUT, 't'), true)).toBe('fail');
    expect(completionOfError(new DbError(ErrorCode.TIMED_OUT, 't'), false)).toBe('info');
    expect(completionOfError(new DbError(ErrorCode.INVALID_ARGUMENT, 'x'), false)).toBe('fail');
  });

  it('verify: failed and unknown completions are grouped by error code, most frequent first, and reported', () => {
    const done = (i: number, type: HistoryOp['type'], error?: string): HistoryOp => ({ ...op(i, i, type, 'write', 'a', i), ...(error ? { error } : {}) });
    const h = [
      done(0, 'fail', 'TXN_CONFLICT: conflicts with txn 1'),
      done(1, 'fail', 'TXN_CONFLICT: conflicts with txn 2'),
      done(2, 'info', 'TIMED_OUT: write after 1000 ms'),
      done(3, 'fail', 'TIMED_OUT: read after 1000 ms'),
      done(4, 'fail', 'cas mismatch (read 3)'),
      done(5, 'info'),
      done(6, 'ok'),
    ];
    expect(reasonOf('NOT_THE_LEADER: tablet t: not the leader')).toBe('NOT_THE_LEADER');
    expect(reasonOf('insufficient funds')).toBe('insufficient funds');
    expect(failReasons(h)).toEqual([
      { reason: 'TIMED_OUT', fail: 1, info: 1 },
      { reason: 'TXN_CONFLICT', fail: 2, info: 0 },
      { reason: 'cas mismatch', fail: 1, info: 0 },
      { reason: 'no error text', fail: 0, info: 1 },
    ]);
    const r = judge('register', h, [], { valid: true, anomalies: {}, lostWrites: 0, details: [] }, 1, 10);
    expect(markdownReport([r], { nemesis: 'kill', command: 'tessera verify' })).toContain('Failed / unknown operations by reason: TIMED_OUT 1 / 1, TXN_CONFLICT 2 / 0, cas mismatch 1 / 0, no error text 0 / 1');
  });

  it('verify: a history with too few ok ops or no fault window is vacuous, not valid', () => {
    const h = [op(0, 0, 'invoke', 'write', 'a', 0), op(1, 0, 'ok', 'write', 'a', 1)];
    const w: FaultWindow[] = [{ kind: 'kill', target: 'tserver 0', startNs: 0, endNs: 1e6 }];
    expect(judge('register', h, w, { valid: true, anomalies: {}, lostWrites: 0, details: [] }, 1, 10).verdict).toBe('vacuous');
    const many: HistoryOp[] = [];
    for (let i = 0; i < MIN_OK_OPS; i++) many.push(op(2 * i, 0, 'invoke', 'write', `v${i}`, i), op(2 * i + 1, 0, 'ok', 'write', `v${i}`, i + 0.5));
    expect(judge('register', many, [], { valid: true, anomalies: {}, lostWrites: 0, details: [] }, 1, 10).verdict).toBe('vacuous');
    expect(judge('register', many, w, { valid: true, anomalies: {}, lostWrites: 0, details: [] }, 1, 10).verdict).toBe('valid');
    expect(judge('register', many, w, { valid: false, anomalies: { nonlinearizable: 1 }, lostWrites: 0, details: [] }, 1, 10).verdict).toBe('INVALID');
  });

  it('verify: a run may end early only once ok ops suffice and an applied window ended a recovery time ago', () => {
    const done: FaultWindow = { kind: 'kill', target: 'tserver 0', startNs: 0, endNs: 5e9 };
    expect(historyCounts(MIN_OK_OPS, [done], 6.5e9, 1_000)).toBe(true);
    expect(historyCounts(MIN_OK_OPS - 1, [done], 6.5e9, 1_000)).toBe(false);
    expect(historyCounts(MIN_OK_OPS, [done], 5.5e9, 1_000)).toBe(false);
    expect(historyCounts(MIN_OK_OPS, [{ ...done, skipped: 'flag has no effect' }], 60e9, 1_000)).toBe(false);
    expect(historyCounts(MIN_OK_OPS, [{ ...done, endNs: 0 }], 60e9, 1_000)).toBe(false);
  });

  it('verify: skipped windows do not count; skew beyond the bound marks the run unsafe in verdict and report', () => {
    const many: HistoryOp[] = [];
    for (let i = 0; i < MIN_OK_OPS; i++) many.push(op(2 * i, 0, 'invoke', 'write', `v${i}`, i), op(2 * i + 1, 0, 'ok', 'write', `v${i}`, i + 0.5));
    const ok = { valid: true, anomalies: {}, lostWrites: 0, details: [] };
    const skew: FaultWindow = { kind: 'skew', target: 'node 1', startNs: 0, endNs: 1e9, skipped: 'TEST_clock_skew_ms does not move the clock' };
    expect(judge('register', many, [skew], ok, 1, 10).verdict).toBe('vacuous');
    const beyond: FaultWindow = { kind: 'skew-beyond', target: 'node 1', startNs: 0, endNs: 1e9, note: '+900 ms BEYOND max_clock_skew_usec' };
    const r = judge('register', many, [beyond], { valid: false, anomalies: { nonlinearizable: 1 }, lostWrites: 0, details: [] }, 1, 10);
    expect(r.verdict).toBe('INVALID');
    expect(r.unsafe).toMatch(/beyond max_clock_skew_usec/);
    expect(verdictLine(r)).toMatch(/UNSAFE CONFIGURATION/);
    expect(markdownReport([r], { nemesis: 'skew-beyond', command: 'tessera verify' })).toMatch(/Unsafe configuration/);
  });

  it('verify: unavailability is the longest stretch without an ok completion around the fault', () => {
    const h = [op(0, 0, 'invoke', 'read', null, 0), op(1, 0, 'ok', 'read', null, 100), op(2, 0, 'invoke', 'read', null, 100), op(3, 0, 'ok', 'read', null, 900)];
    const [u] = unavailability(h, [{ kind: 'pause', target: 'tserver 1', startNs: 50e6, endNs: 600e6 }]);
    expect(u!.longestGapMs).toBe(800);
    expect(u!.okInWindow).toBe(1);
    expect(u!.failInWindow).toBe(0);
    expect(u!.infoInWindow).toBe(0);
  });
});

describe('verify: register checker with indeterminate writes', () => {
  it('verify: many unread info writes do not blow up the search and stay linearizable', () => {
    const h: HistoryOp[] = [];
    let i = 0;
    for (let p = 0; p < 30; p++) h.push(op(i++, p, 'invoke', 'write', `x${p}`, p), op(i++, p, 'info', 'write', `x${p}`, p + 1));
    h.push(op(i++, 100, 'invoke', 'write', 'a', 50), op(i++, 100, 'ok', 'write', 'a', 51), op(i++, 100, 'invoke', 'read', null, 52), op(i++, 100, 'ok', 'read', 'a', 53));
    expect(checkRegisterKey('k', pairCalls(h), 10_000).valid).toBe(true);
  });

  it('verify: a read of a value no write produced is still caught when info writes are dropped', () => {
    const h = [op(0, 0, 'invoke', 'write', 'a', 0), op(1, 0, 'info', 'write', 'a', 1), op(2, 1, 'invoke', 'read', null, 5), op(3, 1, 'ok', 'read', 'zzz', 6)];
    expect(checkRegisterKey('k', pairCalls(h)).valid).toBe(false);
  });

  it('verify: a read of an info write value is explained by that write', () => {
    const h = [op(0, 0, 'invoke', 'write', 'a', 0), op(1, 0, 'info', 'write', 'a', 1), op(2, 1, 'invoke', 'read', null, 5), op(3, 1, 'ok', 'read', 'a', 6)];
    expect(checkRegisterKey('k', pairCalls(h)).valid).toBe(true);
  });
});

describe('verify: transaction protocols and the client-crash nemesis', () => {
  it('verify: client-crash is split off the server nemeses; percolator runs bank and append, snapshot only; client-crash needs percolator', async () => {
    const { splitClientCrash } = await import('../../lab/verify/verify-cli');
    const { makeWorkload } = await import('../../lab/verify/verify-runner');
    const { PercolatorBankWorkload } = await import('../../lab/verify/percolator-bank-workload');
    expect(splitClientCrash('kill,client-crash,pause')).toEqual({ serverKinds: 'kill,pause', clientCrash: true });
    expect(splitClientCrash('client-crash')).toEqual({ serverKinds: 'none', clientCrash: true });
    expect(splitClientCrash('kill')).toEqual({ serverKinds: 'kill', clientCrash: false });
    const fakeClient = { beginTransaction: () => undefined } as never;
    expect(makeWorkload('bank', fakeClient, { txnProtocol: 'percolator', clientCrash: true })).toBeInstanceOf(PercolatorBankWorkload);
    expect(makeWorkload('register', fakeClient, { txnProtocol: 'percolator' })).toMatch(/YugabyteDB-style transactions only/);
    expect(makeWorkload('append', fakeClient, { txnProtocol: 'percolator' })).toMatchObject({ name: 'append', table: 'verify_pappend' });
    expect(makeWorkload('bank', fakeClient, { txnProtocol: 'percolator', isolation: 'serializable' })).toMatch(/snapshot isolation only/);
    expect(makeWorkload('bank', fakeClient, { clientCrash: true })).toMatch(/needs --txn_protocol percolator/);
  });

  it('verify: the Percolator bank finds a wrong total and an orphaned lock, and is inconclusive without its final read', async () => {
    const { PercolatorBankWorkload } = await import('../../lab/verify/percolator-bank-workload');
    const w = new PercolatorBankWorkload();
    const good = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [String(i), 100]));
    const bad = { ...good, '0': 99 };
    const h = [op(0, 0, 'invoke', 'read', null, 1), op(1, 0, 'ok', 'read', good, 2), op(2, 1, 'invoke', 'read', null, 3), op(3, 1, 'ok', 'read', bad, 4)];
    const v = w.check(h);
    expect(v.anomalies['wrong-total']).toBe(1);
    expect(v.inconclusive).toMatch(/final read/);
    (w as unknown as { locksLeft: number }).locksLeft = 2;
    expect(w.check(h.slice(0, 2)).anomalies).toEqual({ 'orphaned-lock': 2 });
  });
});
