/**
 * Per-table WAL durability (issue 57): what an acknowledged append (append + sync() resolved) keeps
 * under each level, after a process crash (a second storage opened on the files as the OS has them,
 * the first one's memory abandoned) and after a power loss (LazyWalFs drops every unsynced byte).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Flags } from '../../common/flags';
import { silentLogger } from '../../common/log';
import { FileLogStorage } from '../../raft/wal/file-log-storage';
import { LazyWalFs } from '../../raft/wal/lazy-wal-fs';
import { NodeWalFs } from '../../raft/wal/wal-fs';
import { parseWalDurability, WalDurability, WAL_DURABILITY_LEVELS } from '../../raft/wal/wal-durability';
import { segmentPath } from '../../raft/wal/wal-segments';
import { ent } from './log-storage-compliance';
import { DbError } from '../../common/errors';
import { NodeId } from '../../common/ids';

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-durability-'));
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));
let seq = 0;
const freshDir = (): string => path.join(ROOT, `log-${++seq}`);

function flagsWith(intervalMs: number, durableWalWrite = true): Flags {
  const f = new Flags();
  f.setFromString('interval_durable_wal_write_ms', intervalMs);
  f.setFromString('durable_wal_write', durableWalWrite);
  return f;
}

async function open(dir: string, fsLayer: LazyWalFs | NodeWalFs, durability: WalDurability, intervalMs = 600_000, durableWalWrite = true): Promise<FileLogStorage> {
  return FileLogStorage.open(dir, { fs: fsLayer, flags: flagsWith(intervalMs, durableWalWrite), durability, logger: silentLogger(), onFatal: () => undefined });
}

/** Three entries appended, commit 3, sync() resolved: what every level acknowledges. */
async function ackThree(s: FileLogStorage): Promise<void> {
  s.append([ent(1, 1), ent(2, 1), ent(3, 1)]);
  s.setHardState({ term: 1, vote: NodeId('a'), commit: 3 });
  await s.sync();
}

const expectedAfter = {
  processCrash: { ASYNC: 0, FLUSH: 3, FSYNC: 3 },
  powerLoss: { ASYNC: 0, FLUSH: 0, FSYNC: 3 },
} as const;

describe('wal durability: what an acknowledged append survives under each level', () => {
  for (const level of WAL_DURABILITY_LEVELS) {
    it(`wal durability ${level}: fdatasyncs before acknowledging only under FSYNC`, async () => {
      const lazy = new LazyWalFs();
      const s = await open(freshDir(), lazy, level);
      const before = s.stats().logFsyncs;
      await ackThree(s);
      expect(s.stats().logFsyncs - before).toBe(level === 'FSYNC' ? 1 : 0);
      expect(s.durability()).toBe(level);
      await s.close();
    });

    it(`wal durability ${level}: after a process crash the log keeps ${expectedAfter.processCrash[level]} of 3 acknowledged entries`, async () => {
      const dir = freshDir();
      const first = await open(dir, new LazyWalFs(), level);
      await ackThree(first);
      // The crashed process's memory is gone; the files are as the OS has them.
      const second = await open(dir, new NodeWalFs(), level);
      expect(second.lastIndex()).toBe(expectedAfter.processCrash[level]);
      await second.close();
    });

    it(`wal durability ${level}: after a power loss the log keeps ${expectedAfter.powerLoss[level]} of 3 acknowledged entries, and term and vote always`, async () => {
      const dir = freshDir();
      const lazy = new LazyWalFs();
      const first = await open(dir, lazy, level);
      await ackThree(first);
      lazy.crash();
      const second = await open(dir, lazy, level);
      expect(second.lastIndex()).toBe(expectedAfter.powerLoss[level]);
      const hs = second.initialState().hardState;
      expect({ term: hs.term, vote: hs.vote }).toEqual({ term: 1, vote: 'a' });
      // The metadata may name a commit the lost log no longer has; recovery lowers it to the log.
      expect(hs.commit).toBeLessThanOrEqual(second.lastIndex());
      await second.close();
    });
  }

  it('wal durability ASYNC: the interval flush writes and fdatasyncs the held records', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const s = await open(dir, lazy, 'ASYNC', 10);
    await ackThree(s);
    const seg = segmentPath(dir, 1);
    const start = lazy.syncedBytes(seg) ?? 0;
    for (let i = 0; i < 2000 && s.stats().logFsyncs === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(s.stats().logFsyncs).toBeGreaterThan(0);
    expect(lazy.syncedBytes(seg) ?? 0).toBeGreaterThan(start);
    lazy.crash();
    const again = await open(dir, lazy, 'ASYNC');
    expect(again.lastIndex()).toBe(3);
    await again.close();
  });

  it('wal durability: strengthening ASYNC to FSYNC makes every held entry durable at once', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const s = await open(dir, lazy, 'ASYNC');
    await ackThree(s);
    s.setDurability('FSYNC');
    expect(s.durability()).toBe('FSYNC');
    lazy.crash();
    const again = await open(dir, lazy, 'FSYNC');
    expect(again.lastIndex()).toBe(3);
    expect(again.initialState().hardState.commit).toBe(3);
    await again.close();
  });

  it('wal durability: weakening FSYNC to FLUSH at run time acknowledges without an fdatasync', async () => {
    const lazy = new LazyWalFs();
    const s = await open(freshDir(), lazy, 'FSYNC');
    s.setDurability('FLUSH');
    const before = s.stats().logFsyncs;
    await ackThree(s);
    expect(s.stats().logFsyncs).toBe(before);
    await s.close();
  });

  it('wal durability: durable_wal_write=false caps FSYNC at FLUSH (the server-wide switch still wins)', async () => {
    const s = await open(freshDir(), new LazyWalFs(), 'FSYNC', 600_000, false);
    expect(s.durability()).toBe('FLUSH');
    await s.close();
  });

  it('wal durability: levels parse case-insensitively and bad ones are refused with INVALID_ARGUMENT', () => {
    expect(parseWalDurability('flush')).toBe('FLUSH');
    expect(() => parseWalDurability('sometimes')).toThrow(DbError);
    try {
      parseWalDurability('sometimes');
    } catch (e) {
      expect((e as DbError).code).toBe('INVALID_ARGUMENT');
    }
  });
});
