/**
 * The tablet leader's lock table: per-row exclusive locks behind a tablet gate that writes and row
 * read locks enter shared and a serializable scan's tablet lock enters exclusively, in arrival order.
 */
import { describe, expect, it } from 'vitest';
import { LockTable, type Release } from '../../tserver/tablet/lock-table';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('lock table', () => {
  it('lock-table: shared holders of different rows run together; the same row waits for its holder', async () => {
    const t = new LockTable();
    const a = await t.acquire(['r1']);
    const b = await t.acquire(['r2']);
    expect(t.gateState()).toEqual({ shared: 2, exclusive: false, waiting: 0 });
    let c: Release | undefined;
    void t.acquire(['r1', 'r3']).then((r) => (c = r));
    await tick();
    expect(c).toBeUndefined();
    a();
    await tick();
    expect(c).toBeDefined();
    b();
    c!();
    expect(t.gateState()).toEqual({ shared: 0, exclusive: false, waiting: 0 });
    expect(t.size()).toBe(0);
  });

  it('lock-table: an exclusive request waits for the shared holders, and shared requests after it wait for it (arrival order)', async () => {
    const t = new LockTable();
    const order: string[] = [];
    const w1 = await t.acquire(['r1']);
    const ex = t.acquire([], 'exclusive').then((r) => {
      order.push('scan');
      return r;
    });
    const w2 = t.acquire(['r2']).then((r) => {
      order.push('w2');
      return r;
    });
    await tick();
    expect(order).toEqual([]);
    expect(t.gateState()).toEqual({ shared: 1, exclusive: false, waiting: 2 });
    w1();
    const scan = await ex;
    await tick();
    expect(order).toEqual(['scan']);
    expect(t.gateState()).toEqual({ shared: 0, exclusive: true, waiting: 1 });
    scan();
    (await w2)();
    expect(order).toEqual(['scan', 'w2']);
    expect(t.gateState()).toEqual({ shared: 0, exclusive: false, waiting: 0 });
  });

  it('lock-table: two exclusive requests run one after the other; shared ones queued between them run together after the first', async () => {
    const t = new LockTable();
    const log: string[] = [];
    const take = (name: string, keys: string[], mode: 'shared' | 'exclusive'): Promise<Release> =>
      t.acquire(keys, mode).then((r) => {
        log.push(`+${name}`);
        return r;
      });
    const x1 = await take('x1', [], 'exclusive');
    const s1 = take('s1', ['a'], 'shared');
    const s2 = take('s2', ['b'], 'shared');
    const x2 = take('x2', [], 'exclusive');
    await tick();
    expect(log).toEqual(['+x1']);
    x1();
    const [r1, r2] = await Promise.all([s1, s2]);
    await tick();
    expect(log).toEqual(['+x1', '+s1', '+s2']);
    r1();
    await tick();
    expect(log).toEqual(['+x1', '+s1', '+s2']);
    r2();
    (await x2)();
    expect(log).toEqual(['+x1', '+s1', '+s2', '+x2']);
    expect(t.gateState()).toEqual({ shared: 0, exclusive: false, waiting: 0 });
  });

  it('lock-table: a release is idempotent (a second call frees nothing of anyone else)', async () => {
    const t = new LockTable();
    const a = await t.acquire(['k']);
    a();
    const b = await t.acquire(['k']);
    a();
    expect(t.gateState().shared).toBe(1);
    let c: Release | undefined;
    void t.acquire(['k']).then((r) => (c = r));
    await tick();
    expect(c).toBeUndefined();
    b();
    await tick();
    expect(c).toBeDefined();
    c!();
  });
});
