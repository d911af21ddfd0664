/** The `profile` bench section: a .cpuprofile's summary tables, and its flame graph on request. */
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { summarizeProfileFile } from './cpu-profile-summary';
import { writeFlameGraphs } from './flame-graph';
import { checkSectionArgs, sectionArgs, sectionNumber } from '../section-args';

export interface ProfileArgs {
  file: string;
  top: number;
  /** Absent: no flame graph; '' : beside the profile; else the page's path. */
  flamegraph?: string;
}

/** Parse the section's arguments: FILE [--top N] [--flamegraph [OUT.html]] (in any order). */
export function parseProfileArgs(args: readonly string[]): ProfileArgs {
  checkSectionArgs(args, ['top', 'flamegraph']);
  const isHtml = (a: string | undefined): boolean => a !== undefined && !a.startsWith('--') && /\.html?$/i.test(a);
  // The profile is the first plain argument that is neither --top's value nor --flamegraph's page.
  const file = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--top' && !(args[i - 1] === '--flamegraph' && isHtml(a)));
  if (!file) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'usage: npm run bench profile FILE.cpuprofile [--top N] [--flamegraph [OUT.html]]');
  const top = sectionNumber(args, 'top', 'BENCH_PROFILE_TOP', 15, 1);
  const fg = args.findIndex((a) => a === '--flamegraph' || a.startsWith('--flamegraph='));
  if (fg < 0) return { file, top };
  const a = args[fg]!;
  const out = a.includes('=') ? a.slice(a.indexOf('=') + 1) : isHtml(args[fg + 1]) ? args[fg + 1]! : '';
  if (out !== '' && !isHtml(out)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--flamegraph writes an .html page, got '${out}'`);
  return { file, top, flamegraph: out };
}

/**
 * `npm run bench profile FILE [--top N] [--flamegraph [OUT.html]]`: print the summary of a
 * .cpuprofile; with --flamegraph also write its flame graph (HTML, and folded stacks beside it).
 */
export function runProfileSection(): Promise<void> {
  const o = parseProfileArgs(sectionArgs('profile'));
  const { profile, markdown } = summarizeProfileFile(o.file, o.top);
  process.stdout.write(markdown);
  if (o.flamegraph !== undefined) {
    const { htmlPath, foldedPath } = writeFlameGraphs(profile, o.file, `Flame graph of ${path.basename(o.file)}`, o.flamegraph || undefined);
    process.stdout.write(`\nwrote the flame graph ${htmlPath} (open it in a browser) and the folded stacks ${foldedPath}\n`);
  }
  return Promise.resolve();
}
