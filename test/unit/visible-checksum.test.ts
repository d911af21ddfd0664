/**
 * The visible-state digest (tserver/tablet/visible-checksum.ts) and the verify run's replica
 * convergence judgement (lab/verify/replica-convergence.ts): replicas that differ only in their own
 * schedules (intents applied or not, history collected or not) digest equal; any difference in what
 * they show does not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { RowOp } from '../../docdb/doc-db-api';
import { visibleChecksum } from '../../tserver/tablet/visible-checksum';
import { parseReadHt } from '../../tserver/tserver-web';
import { htFrom } from '../../common/hybrid-time';
import { judgeAttempt, withConvergence, type ConvergenceReport, type ReplicaDigest } from '../../lab/verify/replica-convergence';
import { ht, key, memoryDocDb, op, perCellFlags, Statuses, txnMeta } from './docdb-helpers';

const upsert = (id: number, v: string | null | bigint): RowOp => ({ type: 'upsert', key: key(id), columns: [{ columnId: 1, value: v }, { columnId: 2, value: BigInt(id) }] });

/** The same history on a fresh DocDB: 20 rows, two overwrites, a delete, and transaction t1 (rows 30, 31) committed at 40. */
async function replica(statuses: Statuses, o: { applyT1: boolean; gcAt?: number }): Promise<DocDb> {
  const db = await memoryDocDb();
  await db.writeRegular(Array.from({ length: 20 }, (_, i) => upsert(i + 1, `v${i + 1}`)), ht(10), op(1));
  await db.writeRegular([upsert(3, 'three'), upsert(4, null)], ht(20), op(2));
  await db.writeRegular([{ type: 'delete', key: key(5) }], ht(30), op(3));
  await db.writeIntents(txnMeta('t1', ht(31)), [upsert(30, 'x'), upsert(3, 'from-t1')], ht(32), op(4));
  statuses.commit('t1', ht(40));
  if (o.applyT1 && (await db.markApplyPending(TxnId('t1'), ht(40), op(5)))) await db.applyIntents(TxnId('t1'), ht(40), op(5));
  if (o.gcAt !== undefined) await db.gc(ht(o.gcAt));
  return db;
}

const digest = (db: DocDb, s: Statuses, at: number) => visibleChecksum((o) => db.scan(o), s.resolve, ht(at));

describe('visible checksum: what a replica shows at one hybrid time', () => {
  it('replicas on their own schedules (one applied the committed intents and collected history, one did neither) digest equal; their RegularDB digests differ', async () => {
    const s = new Statuses();
    const quick = await replica(s, { applyT1: true, gcAt: 45 });
    const slow = await replica(s, { applyT1: false });
    expect(quick.historyFloor()).toBe(ht(45));
    expect((await quick.regularChecksum()).sha256).not.toBe((await slow.regularChecksum()).sha256);
    const a = await digest(quick, s, 50);
    const b = await digest(slow, s, 50);
    expect(a).toEqual(b);
    expect(a.rows).toBe(20); // 20 rows − the deleted one + row 30 of t1
    expect(a.pendingTxns).toBe(0);
    // Before t1's commit time it is invisible on both (the slow replica reads its intents as committed later).
    const before = await digest(slow, s, 35);
    expect(before.rows).toBe(19);
    expect(before.sha256).not.toBe(a.sha256);
  });

  it('any difference in a shown value, a row, or a write time changes the digest; a null column equals an absent one', async () => {
    const s = new Statuses();
    const base = await digest(await replica(s, { applyT1: true }), s, 50);
    const changed = await replica(s, { applyT1: true });
    await changed.writeRegular([upsert(7, 'other')], ht(41), op(6));
    expect((await digest(changed, s, 50)).sha256).not.toBe(base.sha256);
    const sameValueLater = await replica(s, { applyT1: true });
    await sameValueLater.writeRegular([upsert(7, 'v7')], ht(41), op(6));
    expect((await digest(sameValueLater, s, 50)).sha256).not.toBe(base.sha256); // the write time is part of the row
    const extra = await replica(s, { applyT1: true });
    await extra.writeRegular([upsert(99, 'new')], ht(41), op(6));
    expect((await digest(extra, s, 50)).rows).toBe(21);
    const nulls = await memoryDocDb();
    const absent = await memoryDocDb();
    await nulls.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 1, value: null }, { columnId: 2, value: 1n }] }], ht(10), op(1));
    await absent.writeRegular([{ type: 'upsert', key: key(1), columns: [{ columnId: 2, value: 1n }] }], ht(10), op(1));
    expect(await digest(nulls, s, 20)).toEqual(await digest(absent, s, 20));
  });

  it('a transaction still pending is not shown and is counted; pages of the scan add up to the whole', async () => {
    const s = new Statuses();
    const db = await replica(s, { applyT1: true });
    await db.writeIntents(txnMeta('t2', ht(41)), [upsert(50, 'p')], ht(42), op(6));
    const d = await digest(db, s, 50);
    expect(d.pendingTxns).toBe(1);
    expect(d.rows).toBe(20);
    // More rows than one scan call returns (1,000): the digest covers all of them.
    const big = await memoryDocDb();
    await big.writeRegular(Array.from({ length: 2500 }, (_, i) => upsert(i + 1, 'r')), ht(10), op(1));
    expect((await digest(big, s, 20)).rows).toBe(2500);
  });

  it('below a replica\'s history floor the digest is refused (SNAPSHOT_TOO_OLD), never computed from collected history', async () => {
    const s = new Statuses();
    const db = await replica(s, { applyT1: true, gcAt: 45 });
    const e = (await digest(db, s, 44).catch((x: unknown) => x)) as { code?: string };
    expect(e.code).toBe('SNAPSHOT_TOO_OLD');
  });
});

/** One step of a tablet's Raft log, as every replica applies it. */
type Step =
  | { kind: 'write'; row: number; v: number }
  | { kind: 'delete'; row: number }
  | { kind: 'intents'; txn: number; rows: number[]; v: number }
  | { kind: 'end'; txn: number; commit: boolean };

/** Per replica and step: apply a finished transaction's intents at once (else leave them), and a GC pass after the step (cutoff lag in steps) or none. */
interface Schedule {
  applyNow: boolean[];
  gcLag: Array<number | undefined>;
}

describe('visible checksum: property', () => {
  it('replicas applying the same log on random schedules (committed intents moved or left, aborted ones removed or left, history GC at random times) digest equal at every time at or above both floors', async () => {
    const stepArb: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), row: fc.integer({ min: 0, max: 5 }), v: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant('delete' as const), row: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ kind: fc.constant('intents' as const), txn: fc.integer({ min: 0, max: 3 }), rows: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 3 }), v: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant('end' as const), txn: fc.integer({ min: 0, max: 3 }), commit: fc.boolean() }),
    );
    const schedArb = (n: number): fc.Arbitrary<Schedule> => fc.record({ applyNow: fc.array(fc.boolean(), { minLength: n, maxLength: n }), gcLag: fc.array(fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }), { minLength: n, maxLength: n }) });
    const arb = fc.array(stepArb, { minLength: 1, maxLength: 25 }).chain((steps) => fc.tuple(fc.constant(steps), schedArb(steps.length), schedArb(steps.length)));
    await fc.assert(
      fc.asyncProperty(arb, async ([steps, ...schedules]) => {
        const statuses = new Statuses();
        const replicas = await Promise.all(schedules.map(() => memoryDocDb()));
        // A transaction's id changes each time it starts again after it ended (t<n>-<generation>).
        const gen = [0, 0, 0, 0];
        const open = new Map<number, string>();
        for (let i = 0; i < steps.length; i++) {
          const s = steps[i]!;
          const at = ht(10 + i);
          const opId = op(i + 1);
          for (const [r, db] of replicas.entries()) {
            if (s.kind === 'write') await db.writeRegular([upsert(s.row, `v${s.v}`)], at, opId);
            else if (s.kind === 'delete') await db.writeRegular([{ type: 'delete', key: key(s.row) }], at, opId);
            else if (s.kind === 'intents') {
              const id = open.get(s.txn) ?? `t${s.txn}-${gen[s.txn]}`;
              await db.writeIntents(txnMeta(id, at), s.rows.map((row) => upsert(row, `${id}:${s.v}`)), at, opId);
            } else {
              const id = open.get(s.txn);
              if (id !== undefined && schedules[r]!.applyNow[i]) {
                if (s.commit && (await db.markApplyPending(TxnId(id), at, opId))) await db.applyIntents(TxnId(id), at, opId);
                if (!s.commit) await db.removeIntents(TxnId(id), opId);
              }
            }
            const lag = schedules[r]!.gcLag[i];
            if (lag !== undefined) await db.gc(ht(10 + Math.max(0, i - lag)), { compactRange: false });
          }
          // The status tablet's side, after every replica applied the step.
          if (s.kind === 'intents' && !open.has(s.txn)) open.set(s.txn, `t${s.txn}-${gen[s.txn]}`);
          if (s.kind === 'end' && open.has(s.txn)) {
            const id = open.get(s.txn)!;
            if (s.commit) statuses.commit(id, at);
            else statuses.abort(id);
            open.delete(s.txn);
            gen[s.txn]!++;
          }
        }
        const floor = replicas.map((db) => db.historyFloor()).reduce((a, b) => (a > b ? a : b), 0n);
        for (let t = 10; t <= 10 + steps.length; t++) {
          if (ht(t) < floor) continue;
          const [a, b] = await Promise.all(replicas.map((db) => digest(db, statuses, t)));
          expect(a, `read at step ${t - 10}`).toEqual(b);
        }
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});

/** The same DocDB opened again over its engines: IntentsDB's records are then read from the engine, not from memory. */
const reopen = (db: DocDb): Promise<DocDb> => DocDb.open({ regular: db.regularDb.db.engine, intents: db.intentsDb.db.engine });

describe('pending provisional records digest', () => {
  it('replicas holding the same provisional records digest equal, read from memory or from the engine, packed or per cell; one changed value, a missing record or one more transaction differ', async () => {
    const build = async (v: string, extra = false, perCell = false): Promise<DocDb> => {
      const db = await memoryDocDb(perCell ? perCellFlags() : undefined);
      await db.writeRegular([upsert(1, 'a')], ht(10), op(1));
      await db.writeIntents(txnMeta('t1', ht(11)), [upsert(2, v), upsert(3, 'b')], ht(12), op(2));
      await db.writeIntents(txnMeta('t2', ht(11)), [{ type: 'delete', key: key(1) }], ht(13), op(3));
      await db.writeIntents(txnMeta('t1', ht(11)), [upsert(4, 'c')], ht(14), op(4));
      if (extra) await db.writeIntents(txnMeta('t3', ht(15)), [upsert(5, 'd')], ht(16), op(5));
      return db;
    };
    const a = await build('x');
    const base = await a.pendingIntentsDigest();
    expect(base.txns).toBe(2);
    // Digested as the per-cell format holds them, weak intents left out: t1 3 rows × (liveness + 2
    // columns) = 9; t2: a row tombstone = 1.
    expect(base.records).toBe(10);
    expect(await (await build('x')).pendingIntentsDigest()).toEqual(base);
    // A replica that wrote the same log without packing rows (txn_packed_intents=false) agrees.
    const perCell = await build('x', false, true);
    expect(await perCell.pendingIntentsDigest()).toEqual(base);
    expect(await (await reopen(perCell)).pendingIntentsDigest()).toEqual(base);
    expect(await (await reopen(a)).pendingIntentsDigest()).toEqual(base);
    expect((await (await build('y')).pendingIntentsDigest()).sha256).not.toBe(base.sha256);
    expect((await (await build('x', true)).pendingIntentsDigest()).txns).toBe(3);
    const lost = await build('x');
    const victim = (await lost.intentsDb.reverseEntries(TxnId('t1'), 100)).entries[0]!.intentKey;
    await lost.intentsDb.db.engine.write([{ type: 'del', key: victim }]);
    const lostDigest = await (await reopen(lost)).pendingIntentsDigest();
    expect(lostDigest.records).toBe(8); // the reverse entry still names the packed row (3 cells): the digest marks it missing
    expect(lostDigest.sha256).not.toBe(base.sha256);
  });

  it('a committed transaction leaves the digest once its apply is marked or done, an aborted one once removed', async () => {
    const db = await memoryDocDb();
    await db.writeIntents(txnMeta('t1', ht(11)), [upsert(2, 'v')], ht(12), op(1));
    await db.writeIntents(txnMeta('t2', ht(11)), [upsert(3, 'v')], ht(12), op(2));
    await db.writeIntents(txnMeta('t3', ht(11)), [upsert(4, 'v')], ht(12), op(3));
    expect((await db.pendingIntentsDigest()).txns).toBe(3);
    expect(await db.markApplyPending(TxnId('t1'), ht(20), op(4))).toBe(true);
    expect((await db.pendingIntentsDigest()).txns).toBe(2); // marked: being applied on this replica's own schedule
    expect((await (await reopen(db)).pendingIntentsDigest()).txns).toBe(2); // the mark is durable
    await db.applyIntents(TxnId('t1'), ht(20), op(4));
    await db.removeIntents(TxnId('t2'), op(5));
    const left = await db.pendingIntentsDigest();
    expect(left.txns).toBe(1);
    const only3 = await memoryDocDb();
    await only3.writeIntents(txnMeta('t3', ht(11)), [upsert(4, 'v')], ht(12), op(3));
    expect(left).toEqual(await only3.pendingIntentsDigest());
  });

  it('property: replicas applying the same log, each committed transaction applied at once or only marked, any of them reopened at any step, hold equal pending digests after every step', async () => {
    type PStep = { kind: 'intents'; txn: number; rows: number[]; v: number } | { kind: 'end'; txn: number; commit: boolean };
    const stepArb: fc.Arbitrary<PStep> = fc.oneof(
      fc.record({ kind: fc.constant('intents' as const), txn: fc.integer({ min: 0, max: 3 }), rows: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 3 }), v: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant('end' as const), txn: fc.integer({ min: 0, max: 3 }), commit: fc.boolean() }),
    );
    const schedArb = (n: number) => fc.record({ applyNow: fc.array(fc.boolean(), { minLength: n, maxLength: n }), reopen: fc.array(fc.boolean(), { minLength: n, maxLength: n }) });
    const arb = fc.array(stepArb, { minLength: 1, maxLength: 20 }).chain((steps) => fc.tuple(fc.constant(steps), schedArb(steps.length), schedArb(steps.length)));
    await fc.assert(
      fc.asyncProperty(arb, async ([steps, ...schedules]) => {
        let replicas = await Promise.all(schedules.map(() => memoryDocDb()));
        const gen = [0, 0, 0, 0];
        const open = new Map<number, string>();
        for (let i = 0; i < steps.length; i++) {
          const s = steps[i]!;
          const at = ht(10 + i);
          const opId = op(i + 1);
          for (const [r, db] of replicas.entries()) {
            if (s.kind === 'intents') {
              const id = open.get(s.txn) ?? `t${s.txn}-${gen[s.txn]}`;
              await db.writeIntents(txnMeta(id, at), s.rows.map((row) => upsert(row, `${id}:${s.v}`)), at, opId);
            } else {
              const id = open.get(s.txn);
              if (id === undefined) continue;
              if (!s.commit) await db.removeIntents(TxnId(id), opId);
              else if ((await db.markApplyPending(TxnId(id), at, opId)) && schedules[r]!.applyNow[i]) await db.applyIntents(TxnId(id), at, opId);
            }
          }
          if (s.kind === 'intents' && !open.has(s.txn)) open.set(s.txn, `t${s.txn}-${gen[s.txn]}`);
          if (s.kind === 'end' && open.has(s.txn)) {
            open.delete(s.txn);
            gen[s.txn]!++;
          }
          replicas = await Promise.all(replicas.map((db, r) => (schedules[r]!.reopen[i] ? reopen(db) : db)));
          const [a, b] = await Promise.all(replicas.map((db) => db.pendingIntentsDigest()));
          expect(a, `after step ${i}`).toEqual(b);
          expect(a!.txns).toBe(open.size);
        }
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});

describe('tablet-checksum read_ht', () => {
  it('a decimal hybrid time, now, or now-MS; anything else is INVALID_ARGUMENT', () => {
    const now = () => ht(100);
    expect(parseReadHt('12345', now)).toBe(12345n);
    expect(parseReadHt('now', now)).toBe(ht(100));
    expect(parseReadHt('now-1500', now)).toBe(ht(100) - htFrom(1_500_000));
    for (const bad of ['', 'yesterday', 'now+5', 'now-', 'now-1.5', '-1', '1e9', '18446744073709551616']) {
      expect(() => parseReadHt(bad, now), bad).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => parseReadHt('now-200000', now)).toThrow(/before the epoch/);
  });
});

describe('replica convergence: judging one attempt', () => {
  const d = (server: string, sha256: string, appliedIndex = 10, stable = true): ReplicaDigest => ({ server, sha256, rows: 5, appliedIndex, stable, pendingTxns: 0 });

  it('equal digests converge; a missing replica, a replica behind or applying while it scanned is asked again; a mismatch at one index is a divergence', () => {
    expect(judgeAttempt([d('a', 'x'), d('b', 'x'), d('c', 'x', 12)], 3)).toEqual({ kind: 'converged', rows: 5, openTxns: 0 });
    expect(judgeAttempt([d('a', 'x'), d('b', 'x')], 3).kind).toBe('unsettled');
    expect(judgeAttempt([d('a', 'x'), d('b', 'x'), d('c', 'y', 9)], 3).kind).toBe('unsettled');
    expect(judgeAttempt([d('a', 'x'), d('b', 'x'), d('c', 'y', 10, false)], 3).kind).toBe('unsettled');
    const div = judgeAttempt([d('a', 'x'), d('b', 'x'), d('c', 'y')], 3);
    expect(div.kind).toBe('diverged');
    expect(div.kind === 'diverged' && div.why).toContain('c: 5 rows, sha256 y');
    expect(div.kind === 'diverged' && div.why).toContain('(c differs from a, b)');
    expect(div.kind === 'diverged' && div.differing).toEqual(['c']);
    // Three different digests: no majority, every replica differs.
    const none = judgeAttempt([d('a', 'x'), d('b', 'y'), d('c', 'z')], 3);
    expect(none.kind === 'diverged' && none.differing).toEqual(['a', 'b', 'c']);
  });

  it('equal rows with different provisional records at one index are a divergence too; a replica not reporting them is compared by rows', () => {
    const i = (server: string, sha: string, intents: string, appliedIndex = 10): ReplicaDigest => ({ ...d(server, sha, appliedIndex), intents: { sha256: intents, txns: 1, records: 4 } });
    expect(judgeAttempt([i('a', 'x', 'p'), i('b', 'x', 'p'), i('c', 'x', 'p')], 3)).toEqual({ kind: 'converged', rows: 5, openTxns: 1 });
    const div = judgeAttempt([i('a', 'x', 'p'), i('b', 'x', 'q'), i('c', 'x', 'p')], 3);
    expect(div.kind).toBe('diverged');
    expect(div.kind === 'diverged' && div.why).toContain('hold different provisional records');
    expect(div.kind === 'diverged' && div.why).toContain('b: 5 rows, sha256 x, provisional records of 1 txn(s): 4, sha256 q');
    expect(div.kind === 'diverged' && div.differing).toEqual(['b']);
    // Behind: asked again, never judged.
    expect(judgeAttempt([i('a', 'x', 'p'), i('b', 'x', 'q', 9), i('c', 'x', 'p')], 3).kind).toBe('unsettled');
    // Rows differ too: named as different rows.
    const both = judgeAttempt([i('a', 'x', 'p'), i('b', 'y', 'q'), i('c', 'x', 'p')], 3);
    expect(both.kind === 'diverged' && both.why).toContain('show different rows');
    expect(judgeAttempt([i('a', 'x', 'p'), d('b', 'x'), i('c', 'x', 'q')], 3).kind).toBe('converged');
  });

  it('a divergence makes the workload\'s verdict invalid with the anomaly replica-divergence; convergence only adds its line', () => {
    const valid = { valid: true, anomalies: {}, lostWrites: 0, details: ['checked'] };
    const ok: ConvergenceReport = { tablets: 2, converged: 2, diverged: [], unsettled: [], rows: 7, ms: 3 };
    const fine = withConvergence(valid, ok);
    expect(fine.valid).toBe(true);
    expect(fine.details[1]).toContain('2 of 2 tablet(s) converged (7 rows');
    expect(withConvergence(valid, { ...ok, openTxns: 3 }).details[1]).toContain('provisional records of 3 open transaction(s) alike');
    const bad = withConvergence(valid, { ...ok, converged: 1, diverged: [{ tabletId: 't9', table: 'tbl', result: 'diverged', why: 'w', attempts: 3 }] });
    expect(bad.valid).toBe(false);
    expect(bad.anomalies).toEqual({ 'replica-divergence': 1 });
    expect(bad.details[1]).toContain('DIVERGED: t9 (tbl): w');
  });
});
