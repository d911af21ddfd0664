/**
 * `tessera sql [--node N]`: psql on a node of the local cluster (as YugabyteDB's ysqlsh), user and
 * database yugabyte. psql comes from PostgreSQL's client package; without it the command says how
 * to install it.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { defaultBaseDir, readState } from './local-cluster';

export const PSQL_INSTALL_HINT = 'psql is not installed: install the PostgreSQL client (Debian/Ubuntu: apt-get install postgresql-client)';

/** host and port of node N's SQL endpoint in the cluster saved in baseDir. */
export function sqlEndpoint(baseDir: string, node: number): { host: string; port: number } {
  const st = readState(baseDir);
  if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no cluster in ${path.resolve(baseDir)} (start one with tessera start)`);
  const ts = st.servers.find((s) => s.role === 'tserver' && s.node === node);
  if (!ts) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${node} has no tserver (nodes 0..${st.nodes - 1})`);
  const addr = ts.pgAddress ?? `${ts.rpcAddress.slice(0, ts.rpcAddress.lastIndexOf(':'))}:5433`;
  return { host: addr.slice(0, addr.lastIndexOf(':')), port: Number(addr.slice(addr.lastIndexOf(':') + 1)) };
}

export function registerSqlCommand(program: Command): void {
  program
    .command('sql')
    .description('open psql on a node of the local cluster (user and database yugabyte), like ysqlsh; extra arguments go to psql')
    .option('--node <n>', 'node whose SQL endpoint to use', '0')
    .option('--base_dir <dir>', 'the cluster started with tessera start', defaultBaseDir())
    .allowExcessArguments(true)
    .argument('[psqlArgs...]')
    .action(async (psqlArgs: string[], o: { node: string; base_dir: string }) => {
      const node = Number(o.node);
      if (!Number.isInteger(node) || node < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--node must be a node number');
      const { host, port } = sqlEndpoint(o.base_dir, node);
      if (spawnSync('psql', ['--version']).error) throw new DbError(ErrorCode.NOT_FOUND, PSQL_INSTALL_HINT);
      const child = spawn('psql', ['-h', host, '-p', String(port), '-U', 'yugabyte', '-d', 'yugabyte', ...psqlArgs], { stdio: 'inherit' });
      const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
      process.exitCode = code;
    });
}
