/**
 * The client a server calls other servers with (a tserver: transaction status and APPLY/REMOVE,
 * table locations, remote bootstrap; a master: tablet creation and deletion, leader moves): a call to
 * a peer on TEST_drop_traffic_peers fails at once with NETWORK_ERROR, as an unreachable peer would.
 * So a lab partition of local processes cuts a node's server-to-server calls too, not only its Raft
 * traffic and heartbeats (both sides of a cut list each other). Clients of the database are not cut.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { droppedPeers } from '../common/server-flags';
import type { RpcClient } from './types';

export function peerClient(inner: RpcClient, flags: Flags): RpcClient {
  return {
    call(address, m, req, o) {
      if (droppedPeers(flags).has(address)) return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `${address} is unreachable (TEST_drop_traffic_peers)`));
      return inner.call(address, m, req, o);
    },
    send(address, m, msg) {
      if (droppedPeers(flags).has(address)) return;
      inner.send(address, m, msg);
    },
    close: () => inner.close(),
    ...(inner.connectionStats ? { connectionStats: () => inner.connectionStats!() } : {}),
    ...(inner.rpcz ? { rpcz: () => inner.rpcz!() } : {}),
  };
}
