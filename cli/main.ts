#!/usr/bin/env node
/**
 * The `tessera` command. Thin: parse, call, print. Every failure ends with exit status 1 and one line
 * `error: CODE: message` (the DbError code callers and scripts can branch on).
 */
import { Command, CommanderError } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { runMaster, runTServer } from './server-commands';
import { registerAdminCommands } from './admin-commands';
import { registerDataCommands } from './data-commands';
import { registerClusterCommands } from './cluster-commands';
import { registerLabCommands } from '../lab/lab-cli';
import { registerVerifyCommand } from '../lab/verify/verify-cli';
import { BENCH_SECTIONS } from '../bench/sections';
import { parseVsArgs, runVsEtcd } from '../bench/vs-etcd';

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
  registerAdminCommands(program);
  registerDataCommands(program);
  registerLabCommands(program);
  registerVerifyCommand(program);
  program
    .command('bench [section]')
    .description(`run a benchmark section (${Object.keys(BENCH_SECTIONS).join(', ')}; default cluster) and print its figures; --vs etcd [--seconds N --warmup N --rounds N --workloads a,b] runs tessera and etcd side by side`)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .action(async (section: string | undefined) => {
      // The side-by-side options go to bench/vs-etcd.ts untouched (it owns their parsing).
      const rest = process.argv.slice(process.argv.indexOf('bench') + 1);
      if (rest.some((a) => a === '--vs' || a.startsWith('--vs='))) return runVsEtcd(parseVsArgs(rest)).then(() => undefined);
      const run = BENCH_SECTIONS[section ?? 'cluster'];
      if (!run) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown bench section '${section ?? ''}' (one of ${Object.keys(BENCH_SECTIONS).join(', ')})`);
      await run();
    });
  return program;
}

export function failureLine(e: unknown): string {
  if (e instanceof DbError) return `error: ${e.code}: ${e.message.split('\n')[0]}`;
  if (e instanceof Error) return `error: ${e.message.split('\n')[0]}`;
  return `error: ${String(e)}`;
}

async function main(): Promise<void> {
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander already printed its message (help, version, usage error).
      process.exit(e.exitCode);
    }
    process.stderr.write(failureLine(e) + '\n');
    if (e instanceof DbError && e.message.includes('\n')) process.stderr.write(e.message.split('\n').slice(1).join('\n') + '\n');
    process.exit(1);
  }
}

if (require.main === module) void main();
