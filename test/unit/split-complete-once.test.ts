/**
 * The master completes a split once, whoever asks: split()'s wait for the children and the
 * background round() both try to complete it. A second completeSplit for a parent the first already
 * removed is refused (TABLET_NOT_FOUND), and that refusal once reached the caller of
 * `tessera admin split_tablet` (the split benchmark) though the split had succeeded (docs/splitting.md).
 */
import { describe, expect, it } from 'vitest';
import { applyCatalogOp } from '../../master/catalog-state';
import type { CatalogState } from '../../master/catalog-types';
import { SplitManager, type SplitManagerDeps } from '../../master/split-manager';
import { DbError, ErrorCode } from '../../common/errors';

function splittingCatalog(): CatalogState {
  const partition = (start: number, end: number) => ({ start, end });
  const tablet = (id: string, p: { start: number; end: number }, extra: object = {}) => ({ id, tableId: 't', partition: p, replicas: [{ tserverUuid: 'ts0', memberType: 'VOTER' }], ...extra });
  return {
    tables: new Map([['t', { id: 't', name: 't', schema: { hashColumns: ['k'] }, numTablets: 1, replicationFactor: 3, state: 'RUNNING', tabletIds: ['p'], createdAtMs: 0 }]]),
    tablets: new Map([
      ['p', tablet('p', partition(0, 65536), { splitChildren: ['a', 'b'] })],
      ['a', tablet('a', partition(0, 32768), { parentId: 'p', splitDepth: 1 })],
      ['b', tablet('b', partition(32768, 65536), { parentId: 'p', splitDepth: 1 })],
    ]),
  } as unknown as CatalogState;
}

/** A catalog whose proposals apply one at a time after a turn of the event loop, like the real one's Raft round. */
function fakeDeps(): { deps: SplitManagerDeps; state: () => CatalogState; proposals: () => number } {
  let state = splittingCatalog();
  let proposals = 0;
  const sys = {
    state: () => state,
    propose: async (op: Parameters<typeof applyCatalogOp>[1]) => {
      proposals++;
      await new Promise((r) => setTimeout(r, 5));
      const r = applyCatalogOp(state, op);
      state = r.state;
      if (r.error) throw new DbError(r.error.code, r.error.message);
      return state;
    },
  };
  const registry = { leaderReport: () => ({ uuid: 'ts0', report: { commitIndex: 5n } }) };
  const log = { info: () => undefined, debug: () => undefined, warn: () => undefined };
  const deps = { sys, registry, client: {}, log, flags: { get: () => 0 }, now: () => Date.now(), timeoutMs: () => 10_000, addressOf: () => '127.0.0.1:1', requireLeader: () => undefined, liveTServers: () => 3 } as unknown as SplitManagerDeps;
  return { deps, state: () => state, proposals: () => proposals };
}

describe('split completion', () => {
  it('two completions at once (split()\'s wait and the background round) both succeed, with one completeSplit', async () => {
    const f = fakeDeps();
    const m = new SplitManager(f.deps);
    const complete = (m as unknown as { maybeComplete(id: string): Promise<void> }).maybeComplete.bind(m);
    await expect(Promise.all([complete('p'), complete('p'), m.round()])).resolves.toBeDefined();
    expect(f.state().tablets.has('p')).toBe(false);
    expect(f.state().tables.get('t')!.tabletIds).toEqual(['a', 'b']);
    expect(f.proposals()).toBe(1);
    expect(m.splitsCompleted).toBe(1);
  });

  it('a completion refused because the split was completed meanwhile is a success; other refusals are not', async () => {
    const f = fakeDeps();
    const m = new SplitManager(f.deps);
    const complete = (m as unknown as { maybeComplete(id: string): Promise<void> }).maybeComplete.bind(m);
    await complete('p');
    // Nothing left to complete: no proposal, no error.
    await expect(complete('p')).resolves.toBeUndefined();
    expect(f.proposals()).toBe(1);
    // A refusal while the parent is still there reaches the caller.
    const g = fakeDeps();
    const sys = g.deps.sys as unknown as { propose: () => Promise<never> };
    sys.propose = () => Promise.reject(new DbError(ErrorCode.TRY_AGAIN, 'not now'));
    const n = new SplitManager(g.deps);
    await expect((n as unknown as { maybeComplete(id: string): Promise<void> }).maybeComplete('p')).rejects.toThrow(/not now/);
  });
});
