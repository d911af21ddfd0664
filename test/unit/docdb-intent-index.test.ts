/**
 * IntentsDB's in-memory intent index (sub-key → intents): conflict checks answer from it instead of
 * engine iterators. It must give exactly the conflicts the engine walk gives, through intent writes,
 * applies (whole and chunked), aborts, reopen, and a budget overflow (then it walks the engine until
 * IntentsDB holds no transaction, and indexes again).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { RowOp } from '../../docdb/doc-db-api';
import { MemoryEngine } from '../../docdb/memory-engine';
import { ht, key, op, txnMeta } from './docdb-helpers';

interface Pair {
  /** Indexed (budget as given), and never indexed (the engine walk): fed the same operations. */
  dbs: [DocDb, DocDb];
  engines: Array<{ regular: MemoryEngine; intents: MemoryEngine }>;
  budgets: [number, number];
}

async function openPair(budget: number): Promise<Pair> {
  const engines = [0, 1].map(() => ({ regular: new MemoryEngine(), intents: new MemoryEngine() }));
  const budgets: [number, number] = [budget, 0];
  const dbs = (await Promise.all(engines.map((e, i) => DocDb.open(e, { intentIndexBytesMax: budgets[i] })))) as [DocDb, DocDb];
  return { dbs, engines, budgets };
}

async function reopen(p: Pair): Promise<void> {
  for (const db of p.dbs) await db.close();
  p.engines = p.engines.map((e) => ({ regular: e.regular.reopen(), intents: e.intents.reopen() }));
  p.dbs = (await Promise.all(p.engines.map((e, i) => DocDb.open(e, { intentIndexBytesMax: p.budgets[i] })))) as [DocDb, DocDb];
}

const rowOp = (kind: 'col' | 'col2' | 'del', k: number): RowOp =>
  kind === 'del' ? { type: 'delete', key: key(k) } : { type: 'upsert', key: key(k), columns: [{ columnId: kind === 'col' ? 1 : 2, value: `v${k}` }] };

function norm(c: unknown[]): string[] {
  return c.map((x) => JSON.stringify(x, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).sort();
}

const KEYS = 4;
type Cmd =
  | { t: 'write'; txn: number; ops: Array<{ kind: 'col' | 'col2' | 'del'; k: number }> }
  | { t: 'apply'; txn: number; chunk: number }
  | { t: 'remove'; txn: number }
  | { t: 'reopen' }
  | { t: 'probe'; txn: number; ops: Array<{ kind: 'col' | 'col2' | 'del'; k: number }> };

const opsArb = fc.array(fc.record({ kind: fc.constantFrom('col' as const, 'col2' as const, 'del' as const), k: fc.integer({ min: 0, max: KEYS - 1 }) }), { minLength: 1, maxLength: 3 });
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant('write' as const), txn: fc.integer({ min: 0, max: 4 }), ops: opsArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('apply' as const), txn: fc.integer({ min: 0, max: 4 }), chunk: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('remove' as const), txn: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('probe' as const), txn: fc.integer({ min: 0, max: 5 }), ops: opsArb }) },
);

async function run(budget: number, cmds: Cmd[]): Promise<{ indexedProbes: number; walkedProbes: number }> {
  const p = await openPair(budget);
  let index = 1;
  let time = 10;
  // Txn ids are used once: after apply/remove a txn number gets a fresh generation.
  const gen = [0, 0, 0, 0, 0, 0];
  const id = (n: number): string => `t${n}.${gen[n]}`;
  let indexedProbes = 0;
  let walkedProbes = 0;
  for (const c of cmds) {
    switch (c.t) {
      case 'write': {
        const ops = c.ops.map((o) => rowOp(o.kind, o.k));
        const at = ht(time++);
        const opId = op(index++);
        for (const db of p.dbs) await db.writeIntents(txnMeta(id(c.txn)), ops, at, opId);
        break;
      }
      case 'apply': {
        const at = ht(time++);
        const opId = op(index++);
        for (const db of p.dbs) {
          if (await db.markApplyPending(TxnId(id(c.txn)), at, opId)) await db.applyIntents(TxnId(id(c.txn)), at, opId, c.chunk);
        }
        gen[c.txn]!++;
        break;
      }
      case 'remove': {
        const opId = op(index++);
        for (const db of p.dbs) await db.removeIntents(TxnId(id(c.txn)), opId);
        gen[c.txn]!++;
        break;
      }
      case 'reopen':
        await reopen(p);
        break;
      case 'probe': {
        const ops = c.ops.map((o) => rowOp(o.kind, o.k));
        const [a, b] = await Promise.all(p.dbs.map((db) => db.findConflicts(txnMeta(id(c.txn)), ops, ht(time))));
        expect(norm(a!)).toEqual(norm(b!));
        const [pa, pb] = await Promise.all(p.dbs.map((db) => db.findIntentConflicts(ops)));
        expect(norm(pa!)).toEqual(norm(pb!));
        if (p.dbs[0].intentsDb.indexStats().complete) indexedProbes++;
        else walkedProbes++;
        break;
      }
    }
  }
  return { indexedProbes, walkedProbes };
}

describe('docdb intent index', () => {
  it('conflicts from the index equal the engine walk through writes, applies, aborts and reopen', async () => {
    let indexed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 5, maxLength: 40 }), async (cmds) => {
        indexed += (await run(1 << 20, cmds)).indexedProbes;
      }),
      { numRuns: 80, seed: 8101 },
    );
    expect(indexed).toBeGreaterThan(100);
  });

  it('over its budget the index is dropped (the walk answers) and comes back once IntentsDB holds no transaction', async () => {
    const p = await openPair(600); // room for a few intents only
    const [db] = p.dbs;
    await db.writeIntents(txnMeta('a'), [rowOp('col', 1)], ht(10), op(1));
    expect(db.intentsDb.indexStats().complete).toBe(true);
    await db.writeIntents(txnMeta('b'), [rowOp('col', 2), rowOp('col2', 2), rowOp('col', 3), rowOp('col2', 3)], ht(11), op(2));
    expect(db.intentsDb.indexStats().complete).toBe(false);
    // The walk still finds b's intents (and a's).
    expect((await db.findConflicts(txnMeta('c'), [rowOp('del', 2)], ht(12))).map((c) => (c.type === 'intent' ? c.txnId : c.type))).toContain('b');
    expect((await db.findConflicts(txnMeta('c'), [rowOp('col', 1)], ht(12))).map((c) => (c.type === 'intent' ? c.txnId : c.type))).toEqual(['a']);
    await db.removeIntents(TxnId('b'), op(3));
    expect(db.intentsDb.indexStats().complete).toBe(false); // a still holds intents
    expect(await db.markApplyPending(TxnId('a'), ht(13), op(4))).toBe(true);
    await db.applyIntents(TxnId('a'), ht(13), op(4));
    expect(db.intentsDb.indexStats()).toEqual({ subKeys: 0, bytes: 0, complete: true });
    await db.writeIntents(txnMeta('d'), [rowOp('col', 5)], ht(14), op(5));
    expect(db.intentsDb.indexStats().complete).toBe(true);
    expect((await db.findConflicts(txnMeta('c'), [rowOp('del', 5)], ht(15))).map((c) => (c.type === 'intent' ? c.txnId : c.type))).toEqual(['d']);
  });

  it('indexed conflict checks open no IntentsDB iterator', async () => {
    const intents = new MemoryEngine();
    const db = await DocDb.open({ regular: new MemoryEngine(), intents });
    await db.writeIntents(txnMeta('a'), [rowOp('col', 1)], ht(10), op(1));
    let iterators = 0;
    const orig = intents.iterator.bind(intents);
    intents.iterator = (o) => {
      iterators++;
      return orig(o);
    };
    const c = await db.findConflicts(txnMeta('b'), [rowOp('col', 1), rowOp('del', 2)], ht(11));
    expect(c.map((x) => (x.type === 'intent' ? x.txnId : x.type))).toEqual(['a']);
    expect(iterators).toBe(0);
  });
});
