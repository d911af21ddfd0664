/** `bench --vs etcd|postgres`: which side-by-side benchmark the command line asks for. */
import { parseVsArgs, runVsEtcd } from './vs-etcd';
import { parseVsPostgresArgs, runVsPostgres } from './vs-postgres';

/** The value of --vs in args ('--vs X' or '--vs=X'), else undefined. */
export function vsTarget(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--vs') return args[i + 1] ?? '';
    if (a.startsWith('--vs=')) return a.slice(5);
  }
  return undefined;
}

/** Run the side-by-side benchmark args name (etcd's own parser rejects any other --vs value). */
export async function runVs(args: readonly string[]): Promise<void> {
  if (vsTarget(args) === 'postgres') return runVsPostgres(parseVsPostgresArgs(args));
  await runVsEtcd(parseVsArgs(args));
}
