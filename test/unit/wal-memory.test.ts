import { describe, expect, it } from 'vitest';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';
import type { NodeId } from '../../common/ids';
import { ent, logStorageCompliance } from './log-storage-compliance';

logStorageCompliance('MemoryLogStorage', async () => {
  const storage = new MemoryLogStorage({ trackDurability: true });
  return {
    storage,
    restart: () => {
      storage.crash();
      return Promise.resolve(storage);
    },
    cleanup: () => Promise.resolve(),
  };
});

describe('MemoryLogStorage crash mode', () => {
  it('wal-memory: crash() drops entries and hard state appended after the last sync', async () => {
    const s = new MemoryLogStorage({ trackDurability: true });
    s.append([ent(1, 1), ent(2, 1)]);
    s.setHardState({ term: 1, vote: 'a' as NodeId, commit: 1 });
    await s.sync();
    s.append([ent(3, 2)]);
    s.setHardState({ term: 2, vote: 'b' as NodeId, commit: 2 });
    s.crash();
    expect(s.lastIndex()).toBe(2);
    expect(s.initialState().hardState).toEqual({ term: 1, vote: 'a', commit: 1 });
  });

  it('wal-memory: crash() undoes an unsynced truncation and compaction', async () => {
    const s = new MemoryLogStorage({ trackDurability: true });
    s.append([ent(1, 1), ent(2, 1), ent(3, 1)]);
    await s.sync();
    s.append([ent(2, 2)]);
    s.compact(1);
    s.crash();
    expect(s.firstIndex()).toBe(1);
    expect(s.lastIndex()).toBe(3);
    expect(s.term(2)).toBe(1);
  });

  it('wal-memory: many unsynced ops between syncs still capture the exact state', async () => {
    const s = new MemoryLogStorage({ trackDurability: true });
    for (let i = 1; i <= 3000; i++) s.append([ent(i, 1)]);
    await s.sync();
    s.append([ent(3001, 1)]);
    s.crash();
    expect(s.lastIndex()).toBe(3000);
  });

  it('wal-memory: crash() without trackDurability is refused', () => {
    expect(() => new MemoryLogStorage().crash()).toThrow();
  });
});
