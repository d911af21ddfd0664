/**
 * `--profile` of the vs-etcd benchmark: the profiled tservers are stopped so node writes their CPU
 * profiles, and each profile's tables, flame graph and (with `--profile all`) the busy timeline go
 * into the report the run just wrote (and its "latest" copies).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BenchCluster, BenchServer } from './bench-cluster';
import { analyzeBusy, renderBusyTimeline, summarizeProfileFile, writeFlameGraphs, type BusyWindow, type ProfiledServer } from './profiling';
import { log } from './vs-loadgen-run';
import type { VsRun } from './vs-report';

export interface ProfileReportArgs {
  o: { outDir: string; profile: false | 'ts0' | 'all' };
  tessera: BenchCluster;
  runs: readonly VsRun[];
  json: Record<string, unknown>;
  jsonPath: string;
  mdPath: string;
  profileDir: string;
  /** Profile files there before the run (not this run's). */
  profilesBefore: ReadonlySet<string>;
}

export async function appendProfiles(a: ProfileReportArgs): Promise<void> {
  const { o, tessera, runs, json, jsonPath, mdPath, profileDir, profilesBefore } = a;
  const profiled = tessera.servers.filter((s) => s.role === 'tserver').slice(0, o.profile === 'all' ? undefined : 1);
  await stopProfiled(profiled, profileDir);
  // The profiles' tables go into the report the run just wrote (and its "latest" copies). Node
  // names a profile CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the pid says whose it is.
  const fresh = fs.readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile') && !profilesBefore.has(f));
  const rel = (f: string): string => path.relative(o.outDir, f);
  const sections: string[] = [];
  const entries: Array<Record<string, unknown>> = [];
  const loaded: ProfiledServer[] = [];
  profiled.forEach((t, i) => {
    const file = fresh.find((f) => f.split('.')[3] === String(t.child.pid));
    if (!file) {
      log(`cpu profile: tserver ${i} (${t.rpcAddress}) wrote no profile under ${profileDir}; the report has no tables of it`);
      return;
    }
    const profilePath = path.join(profileDir, file);
    const { profile, summary, markdown } = summarizeProfileFile(profilePath);
    const fg = writeFlameGraphs(profile, profilePath, `tserver ${i}, main thread, whole run of ${path.basename(mdPath)}`);
    sections.push(
      markdown.replace('### Where the profiled thread spent its time (V8 CPU profile)', `### Where tserver ${i} spent its time (V8 CPU profile of its main thread, whole run)`) +
        `\nFlame graph: \`${rel(fg.htmlPath)}\` (open it in a browser); folded stacks for flamegraph.pl, inferno or speedscope: \`${rel(fg.foldedPath)}\`.\n`,
    );
    entries.push({ server: `ts${i}`, rpcAddress: t.rpcAddress, file: path.join('profiles', file), flameGraph: rel(fg.htmlPath), foldedStacks: rel(fg.foldedPath), ...summary });
    loaded.push({ name: `ts${i}`, profile });
  });
  let busy: BusyWindow[] = [];
  if (o.profile === 'all' && loaded.length > 0) {
    busy = runs.flatMap((r) => {
      if (r.system !== 'tessera' || !r.perSecond || r.measureStartMonoMicros === undefined) return [];
      const w = analyzeBusy({ label: `${r.workload} round ${r.round}`, perSecond: r.perSecond, startMonoUs: r.measureStartMonoMicros, ...(r.mainThreadCpu ? { onCpu: r.mainThreadCpu } : {}) }, loaded);
      return w ? [w] : [];
    });
    const table = renderBusyTimeline(busy);
    if (table.length > 0) sections.unshift(table.join('\n') + '\n');
  }
  if (sections.length > 0) {
    const section = '\n' + sections.join('\n');
    const withProfile = { ...json, ...(entries[0]?.['server'] === 'ts0' ? { profile: entries[0] } : {}), ...(o.profile === 'all' ? { profiles: entries, busyTimeline: busy } : {}) };
    for (const f of [jsonPath, path.join(o.outDir, 'vs-etcd-latest.json')]) fs.writeFileSync(f, JSON.stringify(withProfile, null, 2));
    for (const f of [mdPath, path.join(o.outDir, 'vs-etcd-latest.md')]) fs.appendFileSync(f, section);
    log(section);
  }
}

/** SIGTERM the profiled tservers so node writes their --cpu-prof files on exit (SIGKILL would lose them). */
export async function stopProfiled(servers: readonly BenchServer[], dir: string): Promise<void> {
  await Promise.all(
    servers.map(async (t) => {
      if (t.child.exitCode !== null) return;
      const gone = new Promise<void>((r) => t.child.once('exit', () => r()));
      t.child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 15_000))]);
      log(`cpu profile of tserver ${t.rpcAddress} written under ${dir} (open it in Chrome DevTools or speedscope)`);
    }),
  );
}
