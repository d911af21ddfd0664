import { describe, expect, it } from 'vitest';
import { MemoryEngine, RangeHidingEngine } from '../../docdb';

const b = (s: string) => new TextEncoder().encode(s);
const t = (u: Uint8Array) => new TextDecoder().decode(u);

async function all(it: { next(): Promise<[Uint8Array, Uint8Array] | undefined>; close(): Promise<void> }): Promise<string[]> {
  const out: string[] = [];
  for (let kv = await it.next(); kv; kv = await it.next()) out.push(t(kv[0]));
  await it.close();
  return out;
}

describe('RangeHidingEngine', () => {
  it('range-hiding engine: reads, scans forward and back, and seeks see only the visible segments', async () => {
    const inner = new MemoryEngine();
    await inner.write(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((k) => ({ type: 'put' as const, key: b(k), value: b(k.toUpperCase()) })));
    // Visible: [a, b) and [d, f): a, d, e.
    const v = new RangeHidingEngine(inner, [{ start: b('d'), end: b('f') }, { start: b('a'), end: b('b') }]);
    expect(await all(v.iterator())).toEqual(['a', 'd', 'e']);
    expect(await all(v.iterator({ reverse: true }))).toEqual(['e', 'd', 'a']);
    expect(await all(v.iterator({ gte: b('b'), lt: b('e') }))).toEqual(['d']);
    expect(await v.get(b('c'))).toBeUndefined();
    expect(t((await v.get(b('d')))!)).toBe('D');
    expect((await v.getMany([b('a'), b('b'), b('e')])).map((x) => (x ? t(x) : undefined))).toEqual(['A', undefined, 'E']);
    const fwd = v.iterator();
    fwd.seek(b('b'));
    expect(await all(fwd)).toEqual(['d', 'e']);
    const back = v.iterator({ reverse: true });
    back.seek(b('c'));
    expect(await all(back)).toEqual(['a']);
    // Writes pass through; a written key shows when it is visible.
    await v.write([{ type: 'put', key: b('dd'), value: b('x') }, { type: 'put', key: b('z'), value: b('x') }]);
    expect(await all(v.iterator())).toEqual(['a', 'd', 'dd', 'e']);
  });
});
