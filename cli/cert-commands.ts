/** `tessera cert create-ca` / `tessera cert create-node` (lab/tls-certs.ts, docs/security.md). */
import type { Command } from 'commander';
import { createCa, createNodeCert } from '../lab/tls-certs';
import { print } from './cli-io';

export function registerCertCommands(program: Command): void {
  const cert = program.command('cert').description("TLS certificates for --certs_dir (YugabyteDB's layout), made with openssl");
  cert
    .command('create-ca')
    .description('make ca.crt and ca.key in --certs_dir')
    .requiredOption('--certs_dir <dir>', 'the certificates directory')
    .action((o: { certs_dir: string }) => print(`wrote ${createCa(o.certs_dir)}`));
  cert
    .command('create-node <name> [alsoNames...]')
    .description('make node.<name>.crt/.key signed by the CA in --certs_dir; NAME is the host the server binds (or --cert_node_filename), ALSO_NAMES other names clients dial it by')
    .requiredOption('--certs_dir <dir>', 'the certificates directory')
    .action((name: string, alsoNames: string[], o: { certs_dir: string }) => print(`wrote ${createNodeCert(o.certs_dir, name, alsoNames)}`));
}
