/**
 * The KvEngine compliance suite (docs/conventions.md: one suite per interface, run against every
 * implementation). Each implementation's test file calls `kvEngineCompliance(name, factory)`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { KvEngine, KvIterator } from '../../docdb/kv-engine';

export interface EngineFactory {
  /** A fresh, empty engine. */
  create(): Promise<KvEngine>;
  /** Close `e` and open the same data again (durability across restart). */
  reopen(e: KvEngine): Promise<KvEngine>;
}

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const s = (u: Uint8Array | undefined): string | undefined => (u === undefined ? undefined : Buffer.from(u).toString('latin1'));

async function drain(it: KvIterator, max = 10_000): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < max; i++) {
    const e = await it.next();
    if (e === undefined) break;
    out.push(`${s(e[0])}=${s(e[1])}`);
  }
  await it.close();
  return out;
}

export function kvEngineCompliance(name: string, factory: EngineFactory): void {
  describe(`kv-engine compliance: ${name}`, () => {
    const open: KvEngine[] = [];
    const make = async (): Promise<KvEngine> => {
      const e = await factory.create();
      open.push(e);
      return e;
    };
    afterEach(async () => {
      for (const e of open.splice(0)) await e.close();
    });

    it(`${name}: get returns what a batch put, undefined for absent keys, deletes remove`, async () => {
      const e = await make();
      await e.write([
        { type: 'put', key: b('a'), value: b('1') },
        { type: 'put', key: b('b'), value: b('2') },
      ]);
      expect(s(await e.get(b('a')))).toBe('1');
      expect(await e.get(b('zz'))).toBeUndefined();
      await e.write([{ type: 'del', key: b('a') }, { type: 'put', key: b('b'), value: b('3') }]);
      expect(await e.get(b('a'))).toBeUndefined();
      expect(s(await e.get(b('b')))).toBe('3');
    });

    it(`${name}: getMany returns values in the order asked, undefined for absent keys`, async () => {
      const e = await make();
      await e.write([{ type: 'put', key: b('a'), value: b('1') }, { type: 'put', key: b('c'), value: b('3') }]);
      const r = await e.getMany!([b('c'), b('b'), b('a')]);
      expect(r.map(s)).toEqual(['3', undefined, '1']);
    });

    it(`${name}: keys order as unsigned bytes (0xff after 0x7f, prefix first)`, async () => {
      const e = await make();
      const keys = [Buffer.from([0xff]), Buffer.from([0x7f]), Buffer.from([0x01, 0x00]), Buffer.from([0x01])];
      await e.write(keys.map((k) => ({ type: 'put' as const, key: k, value: b('v') })));
      const it = e.iterator();
      const got: string[] = [];
      for (;;) {
        const x = await it.next();
        if (!x) break;
        got.push(Buffer.from(x[0]).toString('hex'));
      }
      await it.close();
      expect(got).toEqual(['01', '0100', '7f', 'ff']);
    });

    it(`${name}: iterator honours gte/lt bounds forward and reverse`, async () => {
      const e = await make();
      await e.write(['a', 'b', 'c', 'd', 'e'].map((k) => ({ type: 'put' as const, key: b(k), value: b(k.toUpperCase()) })));
      expect(await drain(e.iterator({ gte: b('b'), lt: b('d') }))).toEqual(['b=B', 'c=C']);
      expect(await drain(e.iterator({ gte: b('b'), lt: b('d'), reverse: true }))).toEqual(['c=C', 'b=B']);
      expect(await drain(e.iterator({ reverse: true }))).toEqual(['e=E', 'd=D', 'c=C', 'b=B', 'a=A']);
      expect(await drain(e.iterator({ gte: b('bb'), lt: b('bc') }))).toEqual([]);
    });

    it(`${name}: seek positions at first key >= target (reverse: last <= target), clamped to bounds`, async () => {
      const e = await make();
      await e.write(['a', 'c', 'e', 'g'].map((k) => ({ type: 'put' as const, key: b(k), value: b('v') })));
      const it = e.iterator({ gte: b('b'), lt: b('g') });
      it.seek(b('d'));
      expect(s((await it.next())?.[0])).toBe('e');
      it.seek(b('a')); // below gte: clamps to gte
      expect(s((await it.next())?.[0])).toBe('c');
      it.seek(b('z')); // beyond lt: nothing
      expect(await it.next()).toBeUndefined();
      it.seek(b('c'));
      expect(s((await it.next())?.[0])).toBe('c');
      await it.close();

      const r = e.iterator({ gte: b('b'), lt: b('g'), reverse: true });
      r.seek(b('d'));
      expect(s((await r.next())?.[0])).toBe('c');
      r.seek(b('g')); // at the exclusive bound: last key < g
      expect(s((await r.next())?.[0])).toBe('e');
      r.seek(b('zzz'));
      expect(s((await r.next())?.[0])).toBe('e');
      r.seek(b('a')); // below gte: nothing
      expect(await r.next()).toBeUndefined();
      r.seek(b('e'));
      expect(await drain(r)).toEqual(['e=v', 'c=v']);
    });

    it(`${name}: an iterator reads a snapshot (later writes invisible to it)`, async () => {
      const e = await make();
      await e.write([{ type: 'put', key: b('a'), value: b('1') }, { type: 'put', key: b('c'), value: b('1') }]);
      const it = e.iterator();
      expect(s((await it.next())?.[1])).toBe('1');
      await e.write([
        { type: 'put', key: b('b'), value: b('new') },
        { type: 'put', key: b('c'), value: b('2') },
        { type: 'del', key: b('a') },
      ]);
      expect(await drain(it)).toEqual(['c=1']);
      expect(await drain(e.iterator())).toEqual(['b=new', 'c=2']);
    });

    it(`${name}: delRange deletes [start, end) atomically with the rest of the batch`, async () => {
      const e = await make();
      await e.write(['a', 'b', 'c', 'd'].map((k) => ({ type: 'put' as const, key: b(k), value: b('v') })));
      await e.write([{ type: 'delRange', start: b('b'), end: b('d') }, { type: 'put', key: b('x'), value: b('y') }]);
      expect(await drain(e.iterator())).toEqual(['a=v', 'd=v', 'x=y']);
    });

    it(`${name}: writes issued without waiting take effect in call order (same key: the last wins; a range delete sees the puts before it)`, async () => {
      const e = await make();
      const pending: Array<Promise<void>> = [];
      for (let i = 0; i < 50; i++) pending.push(e.write([{ type: 'put', key: b('k'), value: b(`v${i}`) }, { type: 'put', key: b(`n${String(i).padStart(2, '0')}`), value: b('x') }], { sync: i % 10 === 0 }));
      pending.push(e.write([{ type: 'delRange', start: b('n10'), end: b('n20') }]));
      pending.push(e.write([{ type: 'put', key: b('n15'), value: b('back') }]));
      await Promise.all(pending);
      expect(s(await e.get(b('k')))).toBe('v49');
      const keys = (await drain(e.iterator({ gte: b('n'), lt: b('o') }))).map((x) => x.split('=')[0]);
      expect(keys.length).toBe(50 - 10 + 1);
      expect(keys).toContain('n15');
      expect(keys).not.toContain('n14');
    });

    it(`${name}: synced writes survive close and reopen`, async () => {
      const e = await factory.create();
      await e.write([{ type: 'put', key: b('k'), value: b('v') }], { sync: true });
      await e.write([{ type: 'put', key: b('k2'), value: b('v2') }, { type: 'del', key: b('k') }], { sync: true });
      const e2 = await factory.reopen(e);
      open.push(e2);
      expect(await e2.get(b('k'))).toBeUndefined();
      expect(s(await e2.get(b('k2')))).toBe('v2');
    });

    it(`${name}: stats show memtable bytes growing with writes and moving to SST bytes on flush`, async () => {
      const e = await make();
      const before = await e.stats();
      const big = Buffer.alloc(1000, 7);
      const ops = Array.from({ length: 200 }, (_, i) => ({ type: 'put' as const, key: b(`key${String(i).padStart(5, '0')}`), value: big }));
      await e.write(ops);
      const mid = await e.stats();
      expect(mid.memtableBytes).toBeGreaterThan(before.memtableBytes + 150_000);
      await e.flush();
      const after = await e.stats();
      expect(after.memtableBytes).toBeLessThan(mid.memtableBytes / 10);
      expect(after.sstBytes).toBeGreaterThan(0);
      expect(after.keysApprox).toBeGreaterThan(100);
      await e.compactRange();
      const it = e.iterator();
      expect((await drain(it, 1000)).length).toBe(200);
    });

    it(`${name}: a large write (MiB values, deletes and a range delete in one batch) is applied whole and in order`, async () => {
      const e = await make();
      await e.write(['a', 'b', 'c', 'd'].map((k) => ({ type: 'put' as const, key: b(k), value: b('small') })));
      const big = (c: string): Uint8Array => Buffer.alloc(1 << 20, c);
      await e.write([
        { type: 'put', key: b('big1'), value: big('x') },
        { type: 'del', key: b('a') },
        { type: 'delRange', start: b('b'), end: b('d') },
        { type: 'put', key: b('c'), value: b('back') },
        { type: 'put', key: b('big2'), value: big('y') },
        { type: 'put', key: b('big1'), value: big('z') },
      ]);
      const keys = (await drain(e.iterator())).map((x) => x.split('=')[0]);
      expect(keys).toEqual(['big1', 'big2', 'c', 'd']);
      expect(Buffer.from((await e.get(b('big1')))!).equals(Buffer.alloc(1 << 20, 'z'))).toBe(true);
      expect(Buffer.from((await e.get(b('big2')))!).equals(Buffer.alloc(1 << 20, 'y'))).toBe(true);
      expect(s(await e.get(b('c')))).toBe('back');
    });

    it(`${name}: values are copied (mutating the caller's buffer after write changes nothing)`, async () => {
      const e = await make();
      const v = b('abc');
      await e.write([{ type: 'put', key: b('k'), value: v }]);
      v[0] = 0x7a;
      expect(s(await e.get(b('k')))).toBe('abc');
    });
  });
}
