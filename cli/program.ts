/**
 * The `tessera` command line: every command but the servers' fast path (see main.ts). Loaded only
 * when needed, because the lab and benchmark commands pull in heavy modules (Docker client, ...).
 */
import { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { runMaster, runTServer } from './server-commands';
import { registerAdminCommands } from './admin-commands';
import { registerDataCommands } from './data-commands';
import { registerRowCommands } from './row-commands';
import { registerCellCommands } from './cell-commands';
import { registerCertCommands } from './cert-commands';
import { registerDeployCommands } from './deploy-commands';
import { registerObserverCommands } from './observer-commands';
import { registerClusterCommands } from './cluster-commands';
import { registerSqlCommand } from './sql-command';
import { registerLabCommands } from '../lab/lab-cli';
import { registerVerifyCommand } from '../lab/verify/verify-cli';
import { BENCH_SECTIONS } from '../bench/sections';
import { runVs } from '../bench/vs';

export function buildProgram(): Command {
  const program = new Command();
  program.name('tessera').description('tessera: a YugabyteDB-style distributed database lab').version('0.1.0');
  program
    .command('master')
    .description('run a master (YugabyteDB flags: --master_addresses, --rpc_bind_addresses, --webserver_port, --fs_data_dirs, ...)')
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .argument('[flags...]')
    .action(async (args: string[]) => runMaster(args));
  program
    .command('tserver')
    .description('run a tablet server (YugabyteDB flags: --tserver_master_addrs, --rpc_bind_addresses, --webserver_port, --fs_data_dirs, ...)')
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .argument('[flags...]')
    .action(async (args: string[]) => runTServer(args));
  registerClusterCommands(program);
  registerSqlCommand(program);
  registerAdminCommands(program);
  registerDataCommands(program);
  registerRowCommands(program);
  registerCellCommands(program);
  registerCertCommands(program);
  registerDeployCommands(program);
  registerObserverCommands(program);
  registerLabCommands(program);
  registerVerifyCommand(program);
  program
    .command('bench [section]')
    .description(`run a benchmark section (${Object.keys(BENCH_SECTIONS).join(', ')}; default cluster) and print its figures; --vs etcd [--seconds N --warmup N --first-warmup N --rounds N --workloads a,b --tserver-flag name=value] runs tessera and etcd side by side; --vs postgres [--scale N --clients 1,16,64 --seconds N --rounds N --no-blog] runs pgbench against tessera and a local PostgreSQL`)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .action(async (section: string | undefined) => {
      // The side-by-side options go to bench/vs-etcd.ts untouched (it owns their parsing).
      const rest = process.argv.slice(process.argv.indexOf('bench') + 1);
      if (rest.some((a) => a === '--vs' || a.startsWith('--vs='))) return runVs(rest);
      const run = BENCH_SECTIONS[section ?? 'cluster'];
      if (!run) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown bench section '${section ?? ''}' (one of ${Object.keys(BENCH_SECTIONS).join(', ')})`);
      await run();
    });
  return program;
}
