/**
 * Sequences behind serial / bigserial columns. A server takes a range of `cacheSize` values at once
 * (ysql_sequence_cache_minval, as YugabyteDB caches sequence values) in one distributed transaction
 * on the `sql_sequences` row, and hands them out locally; values are unique across servers, not
 * gap-free nor ordered across servers (PostgreSQL's sequences are not gap-free either).
 */
import type { TesseraClient } from '../../client';
import { DbError, ErrorCode } from '../../common/errors';
import { SEQUENCES_TABLE, type SqlCatalog } from './catalog';

/** Attempts to take a range when other servers take ranges of the same sequence at the same time. */
export const SEQUENCE_RANGE_ATTEMPTS_MAX = 20;

export class SequenceCache {
  private readonly ranges = new Map<string, { next: bigint; end: bigint }>();
  private readonly pending = new Map<string, Promise<void>>();

  constructor(
    private readonly client: TesseraClient,
    private readonly catalog: SqlCatalog,
    private readonly cacheSize: () => number,
  ) {}

  /** `n` values of the sequence (allocated in ranges; the caller uses them in order). */
  async take(name: string, n: number): Promise<bigint[]> {
    const out: bigint[] = [];
    while (out.length < n) {
      const r = this.ranges.get(name);
      if (r && r.next < r.end) {
        const k = Math.min(n - out.length, Number(r.end - r.next));
        for (let i = 0; i < k; i++) out.push(r.next++);
        continue;
      }
      await this.refill(name, BigInt(Math.max(this.cacheSize(), n - out.length)));
    }
    return out;
  }

  /** Take values synchronously from what is cached (undefined when the cache is empty). */
  takeCached(name: string): bigint | undefined {
    const r = this.ranges.get(name);
    if (!r || r.next >= r.end) return undefined;
    return r.next++;
  }

  forget(name: string): void {
    this.ranges.delete(name);
  }

  private refill(name: string, size: bigint): Promise<void> {
    let p = this.pending.get(name);
    if (!p) {
      p = this.allocate(name, size).finally(() => this.pending.delete(name));
      this.pending.set(name, p);
    }
    return p;
  }

  private async allocate(name: string, size: bigint): Promise<void> {
    await this.catalog.ensureTables();
    for (let attempt = 1; ; attempt++) {
      const txn = await this.client.beginTransaction();
      try {
        const row = await txn.get(SEQUENCES_TABLE, { name });
        const last = row ? (row['last'] as bigint) : 0n;
        await txn.upsert(SEQUENCES_TABLE, { name, last: last + size });
        await txn.commit();
        this.ranges.set(name, { next: last + 1n, end: last + size + 1n });
        return;
      } catch (e) {
        await txn.abort().catch(() => undefined);
        const retry = e instanceof DbError && [ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED, ErrorCode.READ_RESTART, ErrorCode.TXN_EXPIRED].includes(e.code as 'TXN_CONFLICT');
        if (!retry || attempt >= SEQUENCE_RANGE_ATTEMPTS_MAX) throw e;
      }
    }
  }

  /** A new sequence starts at `start` (default 1: its row is written with last = start - 1). */
  async create(name: string, start = 1n): Promise<void> {
    await this.catalog.ensureTables();
    await this.client.table(SEQUENCES_TABLE).upsert({ name, last: start - 1n });
    this.ranges.delete(name);
  }

  async exists(name: string): Promise<boolean> {
    await this.catalog.ensureTables();
    return (await this.client.table(SEQUENCES_TABLE).get({ name })) !== undefined;
  }

  /** At least `n` values cached here (a statement's nextval calls take them synchronously). */
  async ensureCached(name: string, n: number): Promise<void> {
    const r = this.ranges.get(name);
    if (r && r.end - r.next >= BigInt(n)) return;
    if (!(await this.exists(name))) throw new DbError(ErrorCode.NOT_FOUND, `relation "${name}" does not exist`);
    // The few values left here are dropped (a gap, as a sequence may have): a fresh range is consecutive.
    this.ranges.delete(name);
    await this.refill(name, BigInt(Math.max(this.cacheSize(), n)));
  }

  /** setval: the next value handed out anywhere after this is `value + 1`; this server's cache is dropped. */
  async setval(name: string, value: bigint): Promise<void> {
    if (!(await this.exists(name))) throw new DbError(ErrorCode.NOT_FOUND, `relation "${name}" does not exist`);
    await this.client.table(SEQUENCES_TABLE).upsert({ name, last: value });
    this.ranges.delete(name);
  }

  async drop(name: string): Promise<void> {
    await this.catalog.ensureTables();
    await this.client.table(SEQUENCES_TABLE).delete({ name });
    this.ranges.delete(name);
  }
}
