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
