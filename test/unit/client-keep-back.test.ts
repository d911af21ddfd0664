/**
 * `insert(row, { keepBack: false })` in a deferWrites transaction (client/table.ts): the SQL layer's
 * INSERT inside a block must fail at its statement on a duplicate key, so it is sent at once —
 * after the writes already kept back, which keep their order — while upserts stay kept back.
 */
import { describe, expect, it } from 'vitest';
import { connect, FakeCluster } from './client-txn-fake';

describe('client: keepBack false', () => {
  it('txn: a deferWrites transaction sends an insert with keepBack false at once, after the writes kept back; a plain insert stays kept back', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const writes = (): Array<Record<string, unknown>> => f.calls.filter((x) => x.method === 'TabletServerService.Write').map((x) => x.req);
    const t = await c.beginTransaction({ deferWrites: true });
    await t.table('demo').upsert({ id: 1n, value: 'a' });
    await t.table('demo').insert({ id: 2n, value: 'b' });
    expect(writes()).toHaveLength(0);
    await t.table('demo').insert({ id: 3n, value: 'c' }, { keepBack: false });
    // The two kept back went first (as intents), then the insert itself.
    const sent = writes().flatMap((w) => (w['ops'] as Array<{ type?: string }>).map((o) => o.type));
    expect(sent).toEqual(['UPSERT', 'INSERT', 'INSERT']);
    expect(writes().every((w) => w['txn'] !== undefined && w['singleTabletCommit'] !== true)).toBe(true);
    await t.table('demo').upsert({ id: 4n, value: 'd' });
    expect(writes()).toHaveLength(3);
    await t.commit();
    expect(t.commitPath).toBe('distributed');
    expect(writes()).toHaveLength(4);
  });
});
