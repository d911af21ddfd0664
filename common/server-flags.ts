/**
 * Flags shared by the master and tserver processes. They are defined once here (the registry is
 * global and a name may have one definition); each server applies its own standard value when the
 * flag is left at its default (master: RPC 7100, web 7000; tserver: RPC 9100, web 9000).
 */
import { defineFlag } from './flags';

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
