/**
 * One single-replica TabletPeer on real parts (RocksDB, the file WAL, RawNode) for unit tests: the
 * wiring every tablet-level test needs, and the wait until it leads (a lone voter elects itself).
 */
import * as fs from 'node:fs';
import { expect } from 'vitest';
import type { Clock } from '../../common/clock';
import { SystemClock } from '../../common/clock';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { DocDb } from '../../docdb/doc-db';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { RawNode } from '../../raft/raw-node';
import { FileLogStorage } from '../../raft/wal/file-log-storage';
import { TabletPeer, type TabletPeerDeps } from '../../tserver/tablet/tablet-peer';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { PeerTxnEnv } from '../../tserver/tablet/participant/txn-env';

/** A hash-partitioned (id int64, v string) table's only tablet, on replica ts1. */
export function demoTabletMeta(tabletId = 't1'): TabletMeta {
  return {
    tabletId,
    tableId: 'tbl',
    tableName: 'demo',
    schema: { columns: [{ name: 'id', id: 0, type: 'int64', nullable: false }, { name: 'v', id: 1, type: 'string', nullable: true }], hashColumns: ['id'], rangeColumns: [] },
    partition: { start: 0, end: 65536 },
    peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }],
    schemaVersion: 0,
  };
}

export interface TestPeerOptions {
  meta?: TabletMeta;
  flags?: Flags;
  /** The node's physical clock (default: the system clock). */
  wall?: Clock;
  clock?: HybridClock;
  txnEnv?: PeerTxnEnv;
  seed?: number;
}

export function testPeerDeps(dir: string, o: TestPeerOptions = {}): TabletPeerDeps {
  const flags = o.flags ?? new Flags();
  return {
    dir,
    meta: o.meta ?? demoTabletMeta(),
    selfUuid: 'ts1',
    flags,
    clock: o.clock ?? new HybridClock(o.wall ?? new SystemClock()),
    log: silentLogger(),
    rng: new SeededRng(o.seed ?? 7),
    send: () => undefined,
    openLogStorage: (d, lo) => FileLogStorage.open(d, { flags, ...(lo ? { durability: lo.durability } : {}) }),
    openEngine: (d) => RocksDbEngine.open(d),
    openDocDb: (regular, intents) => DocDb.open({ regular, intents, flags }),
    newRaftCore: (opts) => new RawNode(opts),
    fetchSnapshot: () => Promise.reject(new Error('no snapshots in this test')),
    peerAddress: () => '127.0.0.1:1',
    ...(o.txnEnv ? { txnEnv: o.txnEnv } : {}),
    onFatal: (_t, e) => {
      throw e;
    },
  };
}

/** Tick a lone replica until it leads and has applied its own no-op (bounded: 400 ticks). */
export async function untilLeaderReady(p: TabletPeer): Promise<void> {
  for (let i = 0; i < 400 && !p.raftGroup().isLeaderReady(); i++) {
    p.tick();
    await new Promise((r) => setTimeout(r, 2));
  }
  expect(p.raftGroup().isLeaderReady()).toBe(true);
}

/** Open a lone replica in `dir` and wait until it leads. */
export async function openTestPeer(dir: string, o: TestPeerOptions = {}): Promise<TabletPeer> {
  const p = await TabletPeer.open(testPeerDeps(dir, o));
  await untilLeaderReady(p);
  return p;
}

/** The peers and temporary dirs a test file opens: `cleanup()` (its afterEach) stops and removes them. */
export class PeerJanitor {
  readonly dirs: string[] = [];
  readonly peers: TabletPeer[] = [];
  async cleanup(): Promise<void> {
    for (const p of this.peers.splice(0)) await p.stop();
    for (const d of this.dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  }
}
