/**
 * Flags shared by the master and tserver processes. They are defined once here (the registry is
 * global and a name may have one definition); each server applies its own standard value when the
 * flag is left at its default (master: RPC 7100, web 7000; tserver: RPC 9100, web 9000).
 */
import { defineFlag, FlagTag, type Flags } from './flags';

export const FS_DATA_DIRS = defineFlag({
  name: 'fs_data_dirs',
  type: 'string',
  default: '',
  help: "Directory holding this server's data. Only the first entry of a comma list is used.",
});

export const RPC_BIND_ADDRESSES = defineFlag({
  name: 'rpc_bind_addresses',
  type: 'string',
  default: '',
  help: 'host:port the RPC server binds to (default: 127.0.0.1 and the server\'s standard port: master 7100, tserver 9100; port 0 picks a free port).',
});

export const SERVER_BROADCAST_ADDRESSES = defineFlag({
  name: 'server_broadcast_addresses',
  type: 'string',
  default: '',
  help: "host:port other servers and clients use to reach this server, its identity among them (default: --rpc_bind_addresses as bound). Needed when binding to every interface (0.0.0.0): a Docker lab's servers bind so and broadcast their node name, so a server still starts while its container is cut off from the lab network (its own name resolves only on that network). A missing port takes the bound port.",
});

export const WEBSERVER_PORT = defineFlag({
  name: 'webserver_port',
  type: 'int',
  default: -1,
  help: "Port of the web console (-1: the server's standard port, master 7000, tserver 9000; 0 picks a free port).",
  validate: (v) => (v >= -1 && v <= 65535 ? undefined : 'a port number, 0, or -1 for the standard port'),
});

export const WEBSERVER_INTERFACE = defineFlag({
  name: 'webserver_interface',
  type: 'string',
  default: '',
  help: 'Interface the web console binds to (default: the RPC bind host).',
});

export const PLACEMENT_ZONE = defineFlag({
  name: 'placement_zone',
  type: 'string',
  default: 'zone1',
  help: 'Placement zone of this server (reported to the master).',
});

export const LAB_NODE_NAME = defineFlag({
  name: 'lab_node_name',
  type: 'string',
  default: '',
  help: "The lab's name of the node this server runs on (n0, n1, ...), set by `tessera lab up`: the consoles show it beside host:port. Empty outside a lab.",
});

/**
 * Lab partitions (lab/partition-plan.ts): both servers drop Raft traffic and heartbeats to and from
 * these peers, so a cut is symmetric even though only one side's flag needs to list the other; their
 * server-to-server calls to these peers fail as unreachable (rpc/peer-client.ts).
 */
export const TEST_DROP_TRAFFIC_PEERS = defineFlag({
  name: 'TEST_drop_traffic_peers',
  type: 'string',
  default: '',
  help: 'Comma list of peer RPC addresses: drop all Raft traffic and heartbeats to and from them, and fail calls to them as unreachable (lab partitions). (For testing only!)',
  tags: [FlagTag.runtime],
});

/** The current TEST_drop_traffic_peers as a set of host:port (read on every use: it changes at run time). */
export function droppedPeers(flags: Flags): Set<string> {
  const v = flags.get(TEST_DROP_TRAFFIC_PEERS);
  return v ? new Set(v.split(',').map((s) => s.trim()).filter(Boolean)) : new Set();
}
