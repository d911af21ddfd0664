/**
 * One in-process TabletManager for unit tests (splits, holds, child leaders): memory engines that
 * survive a manager's restart when the caller keeps their map, no remote bootstrap, silent logs.
 */
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { SystemClock } from '../../common/clock';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { MemoryEngine, type KvEngine } from '../../docdb';
import { TabletManager } from '../../tserver/tablet-manager';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';

type ManagerDeps = ConstructorParameters<typeof TabletManager>[0];

export interface TestManagerOptions {
  selfUuid?: string;
  selfAddress?: string;
  seed?: number;
  send?: ManagerDeps['send'];
  /** Memory engines by directory, reopened across restarts (absent: the manager's default engine). */
  engines?: Map<string, MemoryEngine>;
  splitCleanupDelayMs?: number;
}

/** An engine opener over `engines`: a directory opened again gets its engine back, reopened. */
export function memoryEngineOpener(engines: Map<string, MemoryEngine>): (dir: string) => Promise<KvEngine> {
  return async (d: string): Promise<KvEngine> => {
    const prev = engines.get(d);
    const e = prev ? prev.reopen() : new MemoryEngine();
    engines.set(d, e);
    return e;
  };
}

export function testTabletManager(dataDir: string, o: TestManagerOptions = {}): TabletManager {
  return new TabletManager({
    dataDir,
    selfUuid: o.selfUuid ?? 'ts1',
    selfAddress: o.selfAddress ?? '127.0.0.1:1',
    flags: new Flags(),
    clock: new HybridClock(new SystemClock()),
    log: silentLogger(),
    rng: new SeededRng(o.seed ?? 3),
    send: o.send ?? (() => undefined),
    fetchChunk: () => Promise.reject(new Error('no remote bootstrap in this test')),
    chunkBytes: () => 1 << 20,
    ...(o.splitCleanupDelayMs !== undefined ? { splitCleanupDelayMs: o.splitCleanupDelayMs } : {}),
    ...(o.engines ? { openEngine: memoryEngineOpener(o.engines) } : {}),
  });
}

/** Ticks `m` until its tablet `id` exists and leads (bounded). */
export async function untilTabletLeader(m: TabletManager, id: string): Promise<TabletPeer> {
  for (let i = 0; i < 400; i++) {
    if (m.has(id) && m.get(id).raftGroup().isLeaderReady()) return m.get(id);
    m.tickAll();
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`tablet ${id} never led`);
}
