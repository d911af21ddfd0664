/**
 * A TransactionCoordinator on a single-replica status tablet (tablet-peer-harness.ts) for unit tests:
 * opened, leading and started; `close` stops both (once). The caller decides what an APPLY / REMOVE
 * to a participant does.
 */
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import { silentLogger } from '../../common/log';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import { TransactionCoordinator, type CoordinatorDeps } from '../../tserver/transaction/coordinator';
import { testPeerDeps, untilLeaderReady } from './tablet-peer-harness';

/** A single-replica status tablet (the transactions table's schema) for coordinator tests. */
export const STATUS_TABLET_META: TabletMeta = {
  tabletId: 'status-1',
  tableId: 'txns',
  tableName: 'transactions',
  schema: { columns: [{ name: 'txn_id', id: 1, type: 'string', nullable: false }, { name: 'record', id: 2, type: 'bytes', nullable: true }], hashColumns: ['txn_id'], rangeColumns: [] },
  partition: { start: 0, end: 65536 },
  peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }],
  schemaVersion: 0,
};

export interface TestCoordinatorOptions {
  meta: TabletMeta;
  flags: Flags;
  clock: HybridClock;
  seed: number;
  nowMs?: () => number;
  /** What a participant update does; it sees the status tablet's peer. */
  updateParticipant: (peer: TabletPeer) => CoordinatorDeps['updateParticipant'];
}

export async function openTestCoordinator(dir: string, o: TestCoordinatorOptions): Promise<{ c: TransactionCoordinator; peer: TabletPeer; close: () => Promise<void> }> {
  const peer = await TabletPeer.open(testPeerDeps(dir, { meta: o.meta, flags: o.flags, clock: o.clock, seed: o.seed }));
  await untilLeaderReady(peer);
  const c = new TransactionCoordinator({ peer, flags: o.flags, clock: o.clock, log: silentLogger(), ...(o.nowMs ? { nowMs: o.nowMs } : {}), updateParticipant: o.updateParticipant(peer) });
  await c.start();
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    c.stop();
    await peer.stop();
  };
  return { c, peer, close };
}
