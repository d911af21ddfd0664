/**
 * Conflict checks from memory instead of engine iterators must give exactly the conflicts the engine
 * walk gives: IntentsDB's intent index (sub-key → intents), through intent writes, applies (whole and
 * chunked), aborts, reopen, and a budget overflow (then it walks the engine until IntentsDB holds no
 * transaction, and indexes again); and RegularDB's bounds on each row's newest version time (the
 * write-write check skips rows with nothing newer than the read time), through plain writes, applies,
 * reopen and an eviction-sized map.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { RowOp } from '../../docdb/doc-db-api';
import { MemoryEngine } from '../../docdb/memory-engine';
import { ht, key, op, txnMeta } from './docdb-helpers';
import type { KvOp } from '../../docdb/kv-engine';
import { encodeRowDocKey, subDocKey, versionKey } from '../../docdb/storage-keys';
import { encodeHt, HT_UNKNOWN, MAX_VERSION_HT_KEY, MIN_VERSION_HT_KEY, VERSION_BOUND_BUCKETS, VersionBounds } from '../../docdb/version-bounds';

interface Pair {
  /** Indexed (budget as given), and never indexed (the engine walk): fed the same operations. */
  dbs: [DocDb, DocDb];
  engines: Array<{ regular: MemoryEngine; intents: MemoryEngine }>;
  budgets: [number, number];
}

async function openPair(budget: number): Promise<Pair> {
  const engines = [0, 1].map(() => ({ regular: new MemoryEngine(), intents: new MemoryEngine() }));
  const budgets: [number, number] = [budget, 0];
  const dbs = (await Promise.all(engines.map((e, i) => DocDb.open(e, optionsOf(budgets[i]!))))) as [DocDb, DocDb];
  return { dbs, engines, budgets };
}

async function reopen(p: Pair): Promise<void> {
  for (const db of p.dbs) await db.close();
  p.engines = p.engines.map((e) => ({ regular: e.regular.reopen(), intents: e.intents.reopen() }));
  p.dbs = (await Promise.all(p.engines.map((e, i) => DocDb.open(e, optionsOf(p.budgets[i]!))))) as [DocDb, DocDb];
}

/** Budget 0: the reference DB, which walks the engines for everything. */
function optionsOf(budget: number): { intentIndexBytesMax: number; versionBounds: boolean } {
  return { intentIndexBytesMax: budget, versionBounds: budget > 0 };
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
  | { t: 'plain'; ops: Array<{ kind: 'col' | 'col2' | 'del'; k: number }> }
  | { t: 'probe'; txn: number; ops: Array<{ kind: 'col' | 'col2' | 'del'; k: number }>; back: number };

const opsArb = fc.array(fc.record({ kind: fc.constantFrom('col' as const, 'col2' as const, 'del' as const), k: fc.integer({ min: 0, max: KEYS - 1 }) }), { minLength: 1, maxLength: 3 });
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant('write' as const), txn: fc.integer({ min: 0, max: 4 }), ops: opsArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('apply' as const), txn: fc.integer({ min: 0, max: 4 }), chunk: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('remove' as const), txn: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reopen' as const }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('plain' as const), ops: opsArb }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('probe' as const), txn: fc.integer({ min: 0, max: 5 }), ops: opsArb, back: fc.integer({ min: 0, max: 6 }) }) },
);

async function run(budget: number, cmds: Cmd[]): Promise<{ indexedProbes: number; walkedProbes: number; newerFound: number }> {
  const p = await openPair(budget);
  let index = 1;
  let time = 10;
  // Txn ids are used once: after apply/remove a txn number gets a fresh generation.
  const gen = [0, 0, 0, 0, 0, 0];
  const id = (n: number): string => `t${n}.${gen[n]}`;
  let indexedProbes = 0;
  let walkedProbes = 0;
  let newerFound = 0;
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
      case 'plain': {
        const ops = c.ops.map((o) => rowOp(o.kind, o.k));
        const at = ht(time++);
        const opId = op(index++);
        for (const db of p.dbs) await db.writeRegular(ops, at, opId);
        break;
      }
      case 'probe': {
        const ops = c.ops.map((o) => rowOp(o.kind, o.k));
        const readAt = ht(Math.max(1, time - c.back)); // also read times older than some versions
        const [a, b] = await Promise.all(p.dbs.map((db) => db.findConflicts(txnMeta(id(c.txn)), ops, readAt)));
        expect(norm(a!)).toEqual(norm(b!));
        if (a!.some((x) => x.type === 'committedAfterRead')) newerFound++;
        const [pa, pb] = await Promise.all(p.dbs.map((db) => db.findIntentConflicts(ops)));
        expect(norm(pa!)).toEqual(norm(pb!));
        if (p.dbs[0].intentsDb.indexStats().complete) indexedProbes++;
        else walkedProbes++;
        break;
      }
    }
  }
  return { indexedProbes, walkedProbes, newerFound };
}

describe('docdb intent index', () => {
  it('conflicts from the index equal the engine walk through writes, applies, aborts and reopen', async () => {
    let indexed = 0;
    let newer = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 5, maxLength: 40 }), async (cmds) => {
        const r = await run(1 << 20, cmds);
        indexed += r.indexedProbes;
        newer += r.newerFound;
      }),
      { numRuns: 80, seed: 8101 },
    );
    expect(indexed).toBeGreaterThan(100);
    expect(newer).toBeGreaterThan(20); // the write-write rule was exercised, not only skipped
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

  it('version bounds: rows sharing a bucket share the larger bound, the maximum persists across reopen, a database without it walks', async () => {
    const put = (k: number, t: number): KvOp => ({ type: 'put', key: versionKey(subDocKey(encodeRowDocKey(key(k)), { kind: 'row' }), ht(t), 0), value: Buffer.from([1]) });
    const b = new VersionBounds(0n);
    const ops = [put(1, 10), put(2, 20)];
    b.prepare(ops);
    expect(ops.at(-1)).toEqual({ type: 'put', key: MAX_VERSION_HT_KEY, value: encodeHt(ht(20)) });
    expect(b.bound(encodeRowDocKey(key(1)))).toBe(ht(10));
    expect(b.bound(encodeRowDocKey(key(2)))).toBe(ht(20));
    expect(b.bound(encodeRowDocKey(key(3)))).toBe(0n);
    b.prepare([put(1, 5)]); // an older version never lowers a bound, and adds no maximum record
    expect(b.bound(encodeRowDocKey(key(1)))).toBe(ht(10));
    expect(b.stats()).toEqual({ buckets: VERSION_BOUND_BUCKETS, raised: 2, floor: 0n, max: ht(20), min: 0n }); // min unknown (0) stays unknown
    // One bucket: every row shares it, so each bound is the largest written (conservative, never lower).
    const one = new VersionBounds(0n, 1);
    one.prepare([put(1, 10), put(2, 20)]);
    expect(one.bound(encodeRowDocKey(key(1)))).toBe(ht(20));
    expect(one.bound(encodeRowDocKey(key(9)))).toBe(ht(20));
    expect(() => new VersionBounds(0n, 3)).toThrow(/power of two/);

    const regular = new MemoryEngine();
    const db = await DocDb.open({ regular, intents: new MemoryEngine() });
    await db.writeRegular([rowOp('col', 1)], ht(50), op(1));
    expect(db.regularDb.newestVersionBound(encodeRowDocKey(key(1)))).toBe(ht(50));
    expect(db.regularDb.newestVersionBound(encodeRowDocKey(key(2)))).toBe(0n);
    await db.close();
    const again = await DocDb.open({ regular: regular.reopen(), intents: new MemoryEngine() });
    expect(again.regularDb.newestVersionBound(encodeRowDocKey(key(2)))).toBe(ht(50)); // floor = persisted maximum
    expect(await again.findConflicts(txnMeta('t'), [rowOp('col', 1)], ht(40))).toHaveLength(1);
    expect(await again.findConflicts(txnMeta('t'), [rowOp('col', 1)], ht(50))).toEqual([]);
    // Data written without the key (an older version's database): unknown, every check walks.
    const legacy = new MemoryEngine();
    await legacy.write([put(1, 10)]);
    const old = await DocDb.open({ regular: legacy, intents: new MemoryEngine() });
    expect(old.regularDb.newestVersionBound(encodeRowDocKey(key(5)))).toBe(HT_UNKNOWN);
    expect(await old.findConflicts(txnMeta('t'), [rowOp('col', 1)], ht(5))).toHaveLength(1);
    expect(old.oldestVersionBound()).toBe(0n); // nor is its oldest version known
  });

  it('version bounds: a batch raises the same bounds, maximum and minimum as its puts one by one (runs of one row and one time share their hash and decode)', () => {
    const cell = (k: number, sub: 'row' | 'liveness' | number, t: number, w: number): KvOp => ({
      type: 'put',
      key: versionKey(subDocKey(encodeRowDocKey(key(k)), sub === 'row' ? { kind: 'row' } : sub === 'liveness' ? { kind: 'liveness' } : { kind: 'column', id: sub }), ht(t), w),
      value: Buffer.from([1]),
    });
    const arb = fc.array(fc.record({ k: fc.integer({ min: 0, max: 6 }), sub: fc.constantFrom<'row' | 'liveness' | number>('row', 'liveness', 1, 2, 300), t: fc.integer({ min: 1, max: 4 }), w: fc.integer({ min: 0, max: 70 }) }), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(arb, fc.constantFrom(1, 4, VERSION_BOUND_BUCKETS), (cells, buckets) => {
        const ops = cells.map((c) => cell(c.k, c.sub, c.t, c.w));
        const batched = new VersionBounds(ht(2), buckets, HT_UNKNOWN);
        const single = new VersionBounds(ht(2), buckets, HT_UNKNOWN);
        const extra = (o: KvOp[], n: number): KvOp[] => o.slice(n);
        const b = [...ops];
        batched.prepare(b);
        const singles: KvOp[] = [];
        for (const o of ops) {
          const one = [o];
          single.prepare(one);
          singles.push(...extra(one, 1));
        }
        for (let k = 0; k <= 7; k++) expect(batched.bound(encodeRowDocKey(key(k)))).toBe(single.bound(encodeRowDocKey(key(k))));
        expect(batched.stats()).toEqual(single.stats());
        // The batch carries the final maximum / minimum once each; one by one, the last of each is the same.
        const last = (xs: KvOp[], k: Buffer): KvOp | undefined => xs.filter((o) => o.type === 'put' && Buffer.compare(Buffer.from(o.key), k) === 0).at(-1);
        for (const k of [MAX_VERSION_HT_KEY, MIN_VERSION_HT_KEY]) expect(last(extra(b, ops.length), k)).toEqual(last(singles, k));
      }),
      { numRuns: 200 },
    );
  });

  it('version bounds: the oldest version time is none (above every time) until the first write, falls with older versions only, and persists across reopen', async () => {
    const put = (k: number, t: number): KvOp => ({ type: 'put', key: versionKey(subDocKey(encodeRowDocKey(key(k)), { kind: 'row' }), ht(t), 0), value: Buffer.from([1]) });
    const b = new VersionBounds(0n, VERSION_BOUND_BUCKETS, HT_UNKNOWN);
    const first = [put(1, 30), put(2, 20)];
    b.prepare(first);
    expect(first.filter((o) => o.type === 'put' && Buffer.compare(Buffer.from(o.key), MIN_VERSION_HT_KEY) === 0)).toEqual([{ type: 'put', key: MIN_VERSION_HT_KEY, value: encodeHt(ht(20)) }]);
    const newer = [put(3, 40)];
    b.prepare(newer);
    expect(newer.some((o) => o.type === 'put' && Buffer.compare(Buffer.from(o.key), MIN_VERSION_HT_KEY) === 0)).toBe(false); // a newer version leaves it
    const older = [put(3, 10)]; // a transaction applied after later writes, at its older commit time
    b.prepare(older);
    expect(older.at(-1)).toEqual({ type: 'put', key: MIN_VERSION_HT_KEY, value: encodeHt(ht(10)) });
    expect(b.stats().min).toBe(ht(10));

    const regular = new MemoryEngine();
    const db = await DocDb.open({ regular, intents: new MemoryEngine() });
    expect(db.oldestVersionBound()).toBe(HT_UNKNOWN); // an empty database holds no version at all
    await db.writeRegular([rowOp('col', 1)], ht(50), op(1));
    await db.writeRegular([rowOp('col', 2)], ht(60), op(2));
    expect(db.oldestVersionBound()).toBe(ht(50));
    await db.close();
    const again = await DocDb.open({ regular: regular.reopen(), intents: new MemoryEngine() });
    expect(again.oldestVersionBound()).toBe(ht(50));
    await again.writeRegular([rowOp('col', 3)], ht(45), op(3));
    expect(again.oldestVersionBound()).toBe(ht(45));
    // Bounds off: nothing is known.
    const off = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() }, { versionBounds: false });
    expect(off.oldestVersionBound()).toBe(0n);
  });
});
