import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { applyCatalogOp, emptyCatalog, oracleBoundOf } from '../../master/catalog-state';
import { decodeCatalog, decodeCatalogOp, encodeCatalog, encodeCatalogOp } from '../../master/catalog-codec';
import { TimestampOracle, tsFromWallMs, wallMsOfTs, type OracleStore } from '../../master/timestamp-oracle';

/** A store whose persist completes when the test says so, like a Raft round that takes its time. */
class ManualStore implements OracleStore {
  durable = 0n;
  pending: Array<{ bound: bigint; done(): void }> = [];
  persists = 0;
  persistedBound(): bigint {
    return this.durable;
  }
  persist(bound: bigint): Promise<void> {
    this.persists++;
    return new Promise((resolve) =>
      this.pending.push({
        bound,
        done: () => {
          if (bound > this.durable) this.durable = bound;
          resolve();
        },
      }),
    );
  }
  flush(): void {
    for (const p of this.pending.splice(0)) p.done();
  }
}

/** Serve `count` timestamps, completing reservations as they are asked for. */
async function serve(o: TimestampOracle, store: ManualStore, count: number): Promise<bigint> {
  const p = o.getTimestamps(count);
  for (let i = 0; i < 10 && store.pending.length === 0; i++) await Promise.resolve();
  let settled = false;
  void p.finally(() => (settled = true));
  while (!settled) {
    store.flush();
    await new Promise((r) => setImmediate(r));
  }
  return p;
}

describe('timestamp oracle', () => {
  it('oracle: hands out nothing until a bound above it is durable', async () => {
    const store = new ManualStore();
    const o = new TimestampOracle({ store, nowMs: () => 1_000 }, { rangeMs: 100 });
    const p = o.getTimestamps(5);
    let got: bigint | undefined;
    void p.then((t) => (got = t));
    await new Promise((r) => setImmediate(r));
    expect(got).toBeUndefined();
    expect(store.pending).toHaveLength(1);
    store.flush();
    const first = await p;
    expect(first + 5n).toBeLessThanOrEqual(store.durable);
    expect(wallMsOfTs(first)).toBe(1_000);
  });

  it('oracle: concurrent callers get strictly increasing, disjoint ranges, each below the durable bound', async () => {
    const store = new ManualStore();
    let now = 5_000;
    const o = new TimestampOracle({ store, nowMs: () => now }, { rangeMs: 1 });
    const seen: bigint[] = [];
    for (let round = 0; round < 30; round++) {
      now += round % 3; // the wall clock sometimes stands still
      const ps = [1, 7, 100, 3].map((n) => serve(o, store, n).then((f) => ({ f, n })));
      for (const { f, n } of await Promise.all(ps)) {
        expect(f + BigInt(n)).toBeLessThanOrEqual(store.durable);
        for (let i = 0n; i < BigInt(n); i++) seen.push(f + i);
      }
    }
    const sorted = [...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(new Set(seen).size).toBe(seen.length);
    expect(sorted[0]).toBeGreaterThanOrEqual(tsFromWallMs(5_000));
    expect(store.persists).toBeGreaterThan(1);
  });

  it('oracle: a restarted (or newly elected) oracle starts above everything handed out, even with the clock set back', async () => {
    const store = new ManualStore();
    const a = new TimestampOracle({ store, nowMs: () => 10_000 }, { rangeMs: 50 });
    let last = 0n;
    for (let i = 0; i < 20; i++) last = (await serve(a, store, 10)) + 9n;
    // Restart: a new process over the same persisted state, its clock an hour behind.
    const b = new TimestampOracle({ store, nowMs: () => 10_000 - 3_600_000 }, { rangeMs: 50 });
    const next = await serve(b, store, 1);
    expect(next).toBeGreaterThan(last);
    // Failover on the same object: reset() forgets the range; a reservation from before is not reused.
    const c = new TimestampOracle({ store, nowMs: () => 10_000 }, { rangeMs: 50 });
    const p = c.getTimestamps(1);
    await new Promise((r) => setImmediate(r));
    c.reset();
    store.durable += tsFromWallMs(1_000); // another leader reserved meanwhile
    const otherBound = store.durable;
    store.flush();
    const afterReset = await serve(c, store, 1);
    expect(afterReset).toBeGreaterThanOrEqual(otherBound);
    expect(await p).toBeGreaterThan(next);
  });

  it('oracle: the console rate counts whole past seconds', async () => {
    const store = new ManualStore();
    let now = 50_000;
    const o = new TimestampOracle({ store, nowMs: () => now }, { rangeMs: 100_000 });
    await serve(o, store, 10);
    for (let i = 0; i < 20; i++) await serve(o, store, 5);
    expect(o.status().ratePerSec).toBe(0); // the current second is not over
    now += 1_000;
    expect(o.status().ratePerSec).toBe(110 / 10);
    expect(o.status().served).toBe(110);
  });

  it('oracle: a bad count is INVALID_ARGUMENT', async () => {
    const o = new TimestampOracle({ store: new ManualStore(), nowMs: () => 1 }, { rangeMs: 10 });
    for (const n of [0, -1, 1.5, 1 << 20]) {
      const e = await o.getTimestamps(n).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(DbError);
      expect((e as DbError).code).toBe(ErrorCode.INVALID_ARGUMENT);
    }
  });

  it('oracle: the catalog op only raises the bound, and the bound survives a snapshot and an entry round trip', () => {
    let s = emptyCatalog();
    expect(oracleBoundOf(s)).toBe(0n);
    s = applyCatalogOp(s, decodeCatalogOp(encodeCatalogOp({ type: 'reserveTimestamps', bound: '1000' }))).state;
    s = applyCatalogOp(s, { type: 'reserveTimestamps', bound: '900' }).state;
    expect(oracleBoundOf(s)).toBe(1000n);
    expect(applyCatalogOp(s, { type: 'reserveTimestamps', bound: '-5' }).error?.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(oracleBoundOf(decodeCatalog(encodeCatalog(s)))).toBe(1000n);
  });
});
