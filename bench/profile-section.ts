/** The `profile` bench section: a .cpuprofile's summary tables, and its flame graph on request. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseCpuProfile, summarizeProfileFile } from './cpu-profile-summary';
import { writeFlameGraphs } from './flame-graph';
import { checkSectionArgs, sectionArgs, sectionNumber } from './section-args';

/**
 * `npm run bench profile FILE [--top N] [--flamegraph [OUT.html]]`: print the summary of a
 * .cpuprofile; with --flamegraph also write its flame graph (HTML, and folded stacks beside it).
 */
export function runProfileSection(): Promise<void> {
  const args = sectionArgs('profile');
  checkSectionArgs(args, ['top', 'flamegraph']);
  const takesValue = (a: string | undefined): boolean => a === '--top' || a === '--flamegraph';
  const file = args.find((a, i) => !a.startsWith('--') && (i === 0 || !takesValue(args[i - 1])));
  if (!file) throw new Error('usage: npm run bench profile FILE.cpuprofile [--top N] [--flamegraph [OUT.html]]');
  const top = sectionNumber(args, 'top', 'BENCH_PROFILE_TOP', 15, 1);
  process.stdout.write(summarizeProfileFile(file, top).markdown);
  const fg = args.findIndex((a) => a === '--flamegraph' || a.startsWith('--flamegraph='));
  if (fg >= 0) {
    const a = args[fg]!;
    const next = args[fg + 1];
    const out = a.includes('=') ? a.slice(a.indexOf('=') + 1) : next !== undefined && !next.startsWith('--') && next !== file ? next : undefined;
    const profile = parseCpuProfile(fs.readFileSync(file, 'utf8'), file);
    const { htmlPath, foldedPath } = writeFlameGraphs(profile, file, `Flame graph of ${path.basename(file)}`, out);
    process.stdout.write(`\nwrote the flame graph ${htmlPath} (open it in a browser) and the folded stacks ${foldedPath}\n`);
  }
  return Promise.resolve();
}
