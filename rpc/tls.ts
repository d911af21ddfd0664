/**
 * TLS for RPC (wss) and consoles (https) from certificate files in YugabyteDB's layout
 * (docs/security.md): `--certs_dir=DIR` holding `ca.crt` (the cluster's CA: every peer and client
 * verifies servers against it) and, for each server, `node.<name>.crt` / `node.<name>.key`, where
 * <name> is --cert_node_filename or else the host the server binds. Clients verify the server's
 * certificate names the host they dial. Make a lab's certificates with `tessera cert` (cli/cert-commands.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, defineFlag, ErrorCode, type Flags } from '../common';

export const CERTS_DIR = defineFlag({
  name: 'certs_dir',
  type: 'string',
  default: '',
  help: "Directory of TLS certificates (YugabyteDB's layout: ca.crt, node.<name>.crt, node.<name>.key). Set: RPC speaks wss and the console https, and this process verifies the servers it calls against ca.crt.",
});

export const CERT_NODE_FILENAME = defineFlag({
  name: 'cert_node_filename',
  type: 'string',
  default: '',
  help: 'The <name> of node.<name>.crt/.key in --certs_dir (default: the host of --rpc_bind_addresses, or of --server_broadcast_addresses when it binds every interface).',
});

/** What a TLS server needs (PEM). */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
}

/** What this process trusts when it calls servers (PEM of the CA). */
export interface ClientTls {
  ca: Buffer;
}

function read(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `--certs_dir: cannot read ${what} ${file}: ${(e as Error).message}`, { file });
  }
}

export function clientTlsOf(certsDir: string): ClientTls {
  return { ca: read(path.join(certsDir, 'ca.crt'), 'the CA certificate') };
}

export function serverTlsOf(certsDir: string, nodeName: string): ServerTls {
  if (!/^[A-Za-z0-9._:-]+$/.test(nodeName)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--certs_dir: node name '${nodeName}' cannot name a certificate file`);
  return { cert: read(path.join(certsDir, `node.${nodeName}.crt`), 'the node certificate'), key: read(path.join(certsDir, `node.${nodeName}.key`), 'the node key') };
}

/** The node name a server's certificate files carry: --cert_node_filename, else the given host. */
export function certNodeName(flags: Flags, host: string): string {
  return flags.get(CERT_NODE_FILENAME) || host;
}

/** A host:port's host, without IPv6 brackets (what a certificate must name). */
export function hostOfAddress(address: string): string {
  const i = address.lastIndexOf(':');
  const h = i < 0 ? address : address.slice(0, i);
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}
