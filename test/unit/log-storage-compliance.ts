/**
 * The LogStorage compliance suite (docs/conventions.md: one suite per interface, run against every
 * implementation). etcd MemoryStorage semantics plus durability across a restart.
 */
import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../common/assert';
import { DbError, ErrorCode } from '../../common/errors';
import type { NodeId } from '../../common/ids';
import type { Entry, Snapshot } from '../../raft/types';
import type { LogStorage } from '../../raft/wal/log-storage';

export interface LogStorageHarness {
  storage: LogStorage;
  /** Restart as after a crash: the returned storage holds exactly what sync() made durable. */
  restart: () => Promise<LogStorage>;
  cleanup: () => Promise<void>;
}

export function ent(index: number, term: number, text = `e${index}t${term}`): Entry {
  return { index, term, type: 'normal', data: new TextEncoder().encode(text) };
}

function text(e: Entry): string {
  return new TextDecoder().decode(e.data);
}

function ids(es: Entry[]): string[] {
  return es.map((e) => `${e.index}/${e.term}/${e.type}/${text(e)}`);
}

function dbErr(fn: () => unknown): DbError {
  try {
    fn();
  } catch (e) {
    if (e instanceof DbError) return e;
    throw e;
  }
  throw new Error('expected a DbError');
}

function range(lo: number, hi: number, term: number | ((i: number) => number)): Entry[] {
  const out: Entry[] = [];
  for (let i = lo; i <= hi; i++) out.push(ent(i, typeof term === 'number' ? term : term(i)));
  return out;
}

function snap(index: number, term: number, data = 'state'): Snapshot {
  return { meta: { index, term, conf: { voters: ['a', 'b', 'c'] as NodeId[], learners: ['d'] as NodeId[] } }, data: new TextEncoder().encode(data) };
}

export function logStorageCompliance(name: string, make: () => Promise<LogStorageHarness>): void {
  async function withHarness(fn: (h: LogStorageHarness) => Promise<void> | void): Promise<void> {
    const h = await make();
    try {
      await fn(h);
    } finally {
      await h.cleanup();
    }
  }

  describe(`${name}: LogStorage compliance`, () => {
    it('an empty log starts at index 1 with term(0) = 0 and a zero hard state', () =>
      withHarness(({ storage: s }) => {
        expect(s.firstIndex()).toBe(1);
        expect(s.lastIndex()).toBe(0);
        expect(s.term(0)).toBe(0);
        expect(s.entries(1, 1)).toEqual([]);
        expect(s.initialState().hardState).toEqual({ term: 0, vote: '', commit: 0 });
        expect(s.snapshot()).toBeUndefined();
      }));

    it('appended entries read back with their term, type and payload', () =>
      withHarness(({ storage: s }) => {
        const es = [ent(1, 1), { ...ent(2, 1), type: 'noop' as const, data: new Uint8Array(0) }, { ...ent(3, 2), type: 'confChange' as const }];
        s.append(es);
        expect(s.lastIndex()).toBe(3);
        expect(ids(s.entries(1, 4))).toEqual(ids(es));
        expect(s.term(3)).toBe(2);
        expect(ids(s.entries(2, 3))).toEqual(ids([es[1]!]));
      }));

    it('an append at index i replaces every entry at index >= i (conflicting suffix)', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 5, 1));
        s.append([ent(3, 2, 'new3'), ent(4, 2, 'new4')]);
        expect(s.lastIndex()).toBe(4);
        expect(ids(s.entries(1, 5))).toEqual(ids([ent(1, 1), ent(2, 1), ent(3, 2, 'new3'), ent(4, 2, 'new4')]));
        s.append([ent(5, 2)]);
        expect(s.lastIndex()).toBe(5);
      }));

    it('an append that leaves a gap is a bug (assertion)', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 2, 1));
        expect(() => s.append([ent(4, 1)])).toThrow(AssertionError);
        expect(s.lastIndex()).toBe(2);
      }));

    it('entries() honours the byte limit but always returns at least one entry', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 10, 1).map((e) => ({ ...e, data: new Uint8Array(100) })));
        expect(s.entries(1, 11, 1).length).toBe(1);
        expect(s.entries(1, 11, 0).length).toBe(1);
        const two = s.entries(1, 11, 2 * 124);
        expect(two.length).toBe(2);
        expect(s.entries(1, 11, 2 * 124 - 1).length).toBe(1);
        expect(s.entries(1, 11, 1_000_000).length).toBe(10);
        expect(s.entries(3, 11).map((e) => e.index)).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
      }));

    it('term() and entries() of compacted indexes fail NOT_FOUND compacted; beyond the end, unavailable', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 10, (i) => (i <= 5 ? 1 : 2)));
        s.compact(5);
        expect(s.firstIndex()).toBe(6);
        expect(s.term(5)).toBe(1);
        expect(s.term(6)).toBe(2);
        const c = dbErr(() => s.term(4));
        expect(c.code).toBe(ErrorCode.NOT_FOUND);
        expect(c.details['compacted']).toBe(true);
        expect(dbErr(() => s.entries(5, 7)).details['compacted']).toBe(true);
        const u = dbErr(() => s.term(11));
        expect(u.code).toBe(ErrorCode.NOT_FOUND);
        expect(u.details['unavailable']).toBe(true);
        expect(ids(s.entries(6, 11))).toEqual(ids(range(6, 10, 2)));
      }));

    it('compact() at or below the log start fails compacted; beyond the last index is a bug', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 6, 1));
        s.compact(3);
        expect(dbErr(() => s.compact(3)).details['compacted']).toBe(true);
        expect(dbErr(() => s.compact(2)).details['compacted']).toBe(true);
        expect(() => s.compact(7)).toThrow(AssertionError);
        s.compact(6);
        expect(s.firstIndex()).toBe(7);
        expect(s.lastIndex()).toBe(6);
        expect(s.term(6)).toBe(1);
        s.append([ent(7, 2)]);
        expect(ids(s.entries(7, 8))).toEqual(ids([ent(7, 2)]));
      }));

    it('an append partly below the log start keeps only the part after it', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 5, 1));
        s.compact(4);
        s.append(range(3, 7, 1));
        expect(s.firstIndex()).toBe(5);
        expect(s.lastIndex()).toBe(7);
        s.append(range(1, 3, 1));
        expect(s.lastIndex()).toBe(7);
      }));

    it('compact() with a snapshot keeps the snapshot', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 6, 1));
        s.compact(4, snap(4, 1, 'img4'));
        expect(s.snapshot()?.meta.index).toBe(4);
        expect(new TextDecoder().decode(s.snapshot()!.data)).toBe('img4');
      }));

    it('applySnapshot() replaces the log with an empty one based at the snapshot', () =>
      withHarness(({ storage: s }) => {
        s.append(range(1, 5, 1));
        s.applySnapshot(snap(20, 3));
        expect(s.firstIndex()).toBe(21);
        expect(s.lastIndex()).toBe(20);
        expect(s.term(20)).toBe(3);
        expect(s.entries(21, 21)).toEqual([]);
        expect(s.initialState().conf).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'] });
        expect(s.snapshot()?.meta.index).toBe(20);
        s.append([ent(21, 3), ent(22, 4)]);
        expect(ids(s.entries(21, 23))).toEqual(ids([ent(21, 3), ent(22, 4)]));
        const old = dbErr(() => s.applySnapshot(snap(20, 3)));
        expect(old.code).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(old.details['outOfDate']).toBe(true);
      }));

    it('hard state and configuration read back through initialState()', () =>
      withHarness(({ storage: s }) => {
        s.setHardState({ term: 4, vote: 'b' as NodeId, commit: 0 });
        s.setConfState({ voters: ['a', 'b'] as NodeId[], learners: [] });
        expect(s.initialState()).toEqual({ hardState: { term: 4, vote: 'b', commit: 0 }, conf: { voters: ['a', 'b'], learners: [] } });
      }));

    it('concurrent sync() callers all resolve', () =>
      withHarness(async ({ storage: s }) => {
        const waits: Promise<void>[] = [];
        for (let i = 1; i <= 20; i++) {
          s.append([ent(i, 1)]);
          waits.push(s.sync());
        }
        await Promise.all(waits);
        expect(s.lastIndex()).toBe(20);
      }));

    it('everything synced survives a restart: entries, hard state, conf, compaction, snapshot', () =>
      withHarness(async (h) => {
        const s = h.storage;
        s.append(range(1, 8, (i) => (i < 4 ? 1 : 2)));
        s.setHardState({ term: 2, vote: 'a' as NodeId, commit: 6 });
        s.setConfState({ voters: ['a', 'b', 'c'] as NodeId[], learners: [] });
        await s.sync();
        s.compact(3, snap(3, 1, 'img3'));
        await s.sync();
        const r = await h.restart();
        expect(r.firstIndex()).toBe(4);
        expect(r.lastIndex()).toBe(8);
        expect(r.term(3)).toBe(1);
        expect(ids(r.entries(4, 9))).toEqual(ids(range(4, 8, 2)));
        expect(r.initialState()).toEqual({ hardState: { term: 2, vote: 'a', commit: 6 }, conf: { voters: ['a', 'b', 'c'], learners: [] } });
        expect(r.snapshot()?.meta.index).toBe(3);
        r.append([ent(9, 3)]);
        r.setHardState({ term: 3, vote: '', commit: 9 });
        await r.sync();
        const r2 = await h.restart();
        expect(r2.lastIndex()).toBe(9);
        expect(r2.initialState().hardState).toEqual({ term: 3, vote: '', commit: 9 });
      }));

    it('a snapshot install survives a restart and the old log does not come back', () =>
      withHarness(async (h) => {
        const s = h.storage;
        s.append(range(1, 30, 1));
        await s.sync();
        s.applySnapshot(snap(10, 1));
        s.append([ent(11, 2)]);
        await s.sync();
        const r = await h.restart();
        expect(r.firstIndex()).toBe(11);
        expect(r.lastIndex()).toBe(11);
        expect(r.term(11)).toBe(2);
        expect(r.snapshot()?.meta.index).toBe(10);
      }));

    it('a truncation synced before a restart stays truncated', () =>
      withHarness(async (h) => {
        const s = h.storage;
        s.append(range(1, 10, 1));
        await s.sync();
        s.append([ent(6, 2, 'x6')]);
        await s.sync();
        const r = await h.restart();
        expect(r.lastIndex()).toBe(6);
        expect(ids(r.entries(5, 7))).toEqual(ids([ent(5, 1), ent(6, 2, 'x6')]));
      }));
  });
}
