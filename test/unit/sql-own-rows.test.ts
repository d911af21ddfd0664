/**
 * OwnRows (sql/exec/own-rows.ts): a transaction block's point reads of rows it already read whole
 * are answered from what it knows — its own later writes laid over — and never from an image that a
 * write, an unknown kind of write or a racing read could have made stale. The fake table below is
 * the transaction's view: it applies writes at once, as the tablet would show them to the block.
 */
import { describe, expect, it } from 'vitest';
import type { Row, Table } from '../../client';
import { OwnRows, OWN_ROWS_MAX } from '../../sql/exec/own-rows';

class FakeTable {
  gets = 0;
  readonly rows = new Map<bigint, Row>();
  /** A get waits for this before reading (a read in flight while a write starts). */
  gate: Promise<void> | undefined;
  constructor(readonly name: string) {}
  async get(key: Row, o?: { columns?: string[] }): Promise<Row | undefined> {
    this.gets++;
    if (this.gate) await this.gate;
    const r = this.rows.get(key['id'] as bigint);
    if (!r) return undefined;
    return o?.columns ? Object.fromEntries(Object.entries(r).filter(([c]) => c === 'id' || o.columns!.includes(c))) : { ...r };
  }
  async upsert(row: Row): Promise<void> {
    this.rows.set(row['id'] as bigint, { ...(this.rows.get(row['id'] as bigint) ?? {}), ...row });
  }
  async insert(row: Row): Promise<void> {
    if (this.rows.has(row['id'] as bigint)) throw new Error('ALREADY_EXISTS');
    this.rows.set(row['id'] as bigint, { ...row });
  }
  async delete(key: Row): Promise<void> {
    this.rows.delete(key['id'] as bigint);
  }
  async upsertMany(rows: Row[]): Promise<void> {
    for (const r of rows) await this.upsert(r);
  }
  async increment(key: Row, by: Record<string, bigint>): Promise<void> {
    const r = this.rows.get(key['id'] as bigint)!;
    for (const [c, d] of Object.entries(by)) r[c] = (r[c] as bigint) + d;
  }
}

function setup(): { own: OwnRows; fake: FakeTable; t: Table } {
  const own = new OwnRows();
  const fake = new FakeTable('accounts');
  fake.rows.set(1n, { id: 1n, bal: 10n, note: 'x' });
  return { own, fake, t: own.wrap(fake as unknown as Table) };
}

describe('sql own rows', () => {
  it('sql own rows: a row read whole, then updated, is read again without a tablet read and shows the update (pgbench -N: UPDATE then SELECT)', async () => {
    const { own, fake, t } = setup();
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, bal: 10n, note: 'x' });
    await t.upsert({ id: 1n, bal: 15n });
    expect(await t.get({ id: 1n }, { columns: ['bal'] })).toEqual({ id: 1n, bal: 15n, note: 'x' });
    expect(fake.gets).toBe(1);
    expect(own.hits).toBe(1);
    // A handle opened again (the next statement) shares what the block knows.
    expect(await own.wrap(fake as unknown as Table).get({ id: 1n })).toEqual(fake.rows.get(1n));
    expect(fake.gets).toBe(1);
  });

  it('sql own rows: deletes, absent rows and inserts are known; a failed insert changes nothing', async () => {
    const { fake, t } = setup();
    expect(await t.get({ id: 2n })).toBeUndefined();
    expect(await t.get({ id: 2n })).toBeUndefined();
    expect(fake.gets).toBe(1);
    await t.upsert({ id: 2n, bal: 1n });
    expect(await t.get({ id: 2n })).toEqual({ id: 2n, bal: 1n });
    await t.get({ id: 1n });
    await t.delete({ id: 1n });
    expect(await t.get({ id: 1n })).toBeUndefined();
    await t.insert({ id: 1n, bal: 7n, note: null });
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, bal: 7n, note: null });
    await expect(t.insert({ id: 1n, bal: 8n, note: null })).rejects.toThrow('ALREADY_EXISTS');
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, bal: 7n, note: null });
    expect(fake.gets).toBe(2);
    // Every answer matches what the table itself says.
    for (const id of [1n, 2n]) expect(await t.get({ id })).toEqual(fake.rows.get(id));
  });

  it('sql own rows: projected reads do not fill it; a write of another kind drops the table; clear() drops everything', async () => {
    const { own, fake, t } = setup();
    await t.get({ id: 1n }, { columns: ['bal'] });
    await t.get({ id: 1n }, { columns: ['bal'] });
    expect(fake.gets).toBe(2);
    await t.get({ id: 1n });
    await (t as unknown as FakeTable).increment({ id: 1n }, { bal: 5n });
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, bal: 15n, note: 'x' });
    expect(fake.gets).toBe(4);
    own.clear();
    await t.get({ id: 1n });
    expect(fake.gets).toBe(5);
  });

  it('sql own rows: a read in flight while a write to its table starts is not kept', async () => {
    const { fake, t } = setup();
    await t.get({ id: 9n }); // learns the key columns
    let open!: () => void;
    fake.gate = new Promise((r) => (open = r));
    const racing = t.get({ id: 1n });
    await t.upsert({ id: 1n, bal: 99n });
    open();
    await racing;
    fake.gate = undefined;
    expect(await t.get({ id: 1n })).toEqual({ id: 1n, bal: 99n, note: 'x' });
    expect(fake.gets).toBe(3);
  });

  it('sql own rows: bounded — past OWN_ROWS_MAX images, reads go to the table', async () => {
    const { fake, t } = setup();
    for (let i = 0; i < OWN_ROWS_MAX + 5; i++) await t.get({ id: BigInt(1000 + i) });
    const before = fake.gets;
    await t.get({ id: BigInt(1000 + OWN_ROWS_MAX + 2) });
    await t.get({ id: 1000n });
    expect(fake.gets).toBe(before + 1);
  });
});
