#!/usr/bin/env node
/**
 * The `tessera` command. Thin: parse, call, print. Every failure ends with exit status 1 and one line
 * `error: CODE: message` (the DbError code callers and scripts can branch on).
 *
 * `tessera master|tserver FLAGS` take a fast path that loads only the server code (no command-line
 * parser for the other commands, no lab or benchmark modules): servers start faster and smaller.
 */
import { DbError } from '../common/errors';

function failureLine(e: unknown): string {
  if (e instanceof DbError) return `error: ${e.code}: ${e.message.split('\n')[0]}`;
  if (e instanceof Error) return `error: ${e.message.split('\n')[0]}`;
  return `error: ${String(e)}`;
}

function fail(e: unknown): never {
  process.stderr.write(failureLine(e) + '\n');
  if (e instanceof DbError && e.message.includes('\n')) process.stderr.write(e.message.split('\n').slice(1).join('\n') + '\n');
  process.exit(1);
}

async function main(): Promise<void> {
  const cmd = process.argv[2];
  if (cmd === 'master' || cmd === 'tserver') {
    const servers = await import('./server-commands');
    try {
      await (cmd === 'master' ? servers.runMaster : servers.runTServer)(process.argv.slice(3));
    } catch (e) {
      fail(e);
    }
    return;
  }
  const { exitQuietlyOnClosedPipe } = await import('./cli-io');
  exitQuietlyOnClosedPipe();
  const { buildProgram } = await import('./program');
  const { CommanderError } = await import('commander');
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander already printed its message (help, version, usage error).
      process.exit(e.exitCode);
    }
    fail(e);
  }
}

if (require.main === module) void main();
