/**
 * Options of a bench section. Sections are called without arguments (bench/main.ts and `tessera bench
 * [section]` both pass the rest of the command line through untouched), so a section reads the
 * arguments after its own name: `npm run bench load -- --rows 20000` or `tessera bench load --rows 20000`.
 * Every option also has an environment variable, for scripts.
 */
import { DbError, ErrorCode } from '../common/errors';

/** The arguments after the first occurrence of `section` on the command line (none when absent). */
export function sectionArgs(section: string, argv: readonly string[] = process.argv): string[] {
  const i = argv.indexOf(section, 2);
  return i < 0 ? [] : argv.slice(i + 1);
}

/** `--name V` or `--name=V` in args, else undefined. */
function optionValue(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === `--${name}`) return args[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

/** Fail on options a section does not know: a mistyped option silently ignored would mislead. */
export function checkSectionArgs(args: readonly string[], known: readonly string[]): void {
  for (const a of args) {
    if (!a.startsWith('--')) continue;
    const name = a.slice(2).split('=')[0] ?? '';
    if (!known.includes(name)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown option '${a}' (known: ${known.map((k) => `--${k}`).join(' ')})`);
  }
}

export function sectionString(args: readonly string[], name: string, env: string): string | undefined {
  return optionValue(args, name) ?? process.env[env];
}

export function sectionNumber(args: readonly string[], name: string, env: string, dflt: number, min: number): number {
  const v = sectionString(args, name, env);
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--${name} (${env}) needs a number >= ${min}, got '${v}'`);
  return n;
}
