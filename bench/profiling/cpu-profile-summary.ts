/**
 * What a V8 CPU profile (`node --cpu-prof`, a `.cpuprofile` file) says, as tables a benchmark report
 * can carry: busy and idle time of the profiled thread, self time by area of the code (tessera's
 * folders, each library, Node's internals, native calls, garbage collection), the functions with the
 * most self time, and tessera's functions with the most inclusive time. `npm run bench -- --vs etcd
 * --profile` appends it to its report; `npm run bench profile FILE` prints it for any profile.
 *
 * Time attribution follows Chrome DevTools: sample i lasts from its timestamp to the next one's
 * (timeDeltas[i + 1]); the last sample to the profile's endTime. A function that recurses counts
 * once per sample in the inclusive table.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileRow {
  /** Function name (or area). */
  name: string;
  /** Where: file:line relative to the repository or package, or '' (native). */
  where: string;
  ms: number;
  /** ms / busy ms. */
  shareOfBusy: number;
}

export interface ProfileSummary {
  wallMs: number;
  busyMs: number;
  idleMs: number;
  areas: ProfileRow[];
  selfTop: ProfileRow[];
  inclusiveTop: ProfileRow[];
}

/** Parse a .cpuprofile's text; a clear error when it is not one. */
export function parseCpuProfile(text: string, source = 'profile'): CpuProfile {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const p = v as Partial<CpuProfile>;
  if (typeof v !== 'object' || v === null || !Array.isArray(p.nodes) || !Array.isArray(p.samples) || !Array.isArray(p.timeDeltas) || typeof p.startTime !== 'number' || typeof p.endTime !== 'number') {
    throw new Error(`${source}: not a V8 CPU profile (needs nodes, samples, timeDeltas, startTime, endTime)`);
  }
  if (p.samples.length !== p.timeDeltas.length) throw new Error(`${source}: ${p.samples.length} samples but ${p.timeDeltas.length} time deltas`);
  for (const n of p.nodes) {
    if (typeof n?.id !== 'number' || typeof n.callFrame?.functionName !== 'string' || typeof n.callFrame.url !== 'string') throw new Error(`${source}: malformed node`);
  }
  return p as CpuProfile;
}

/** The part of a url worth showing: from the repository's or a package's folder on. */
function shortUrl(url: string): string {
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const d = url.lastIndexOf('/dist/');
  if (d >= 0) return url.slice(d + '/dist/'.length);
  return url.replace(/^file:\/\//, '');
}

/** The area a frame's self time belongs to. */
export function areaOf(cf: CallFrame): string {
  const u = cf.url;
  if (u === '') {
    if (cf.functionName === '(garbage collector)') return 'garbage collection';
    if (cf.functionName === '(program)') return 'V8 and native code outside JavaScript (program)';
    if (cf.lineNumber >= 0) return 'generated JavaScript (no file: protobufjs codecs, eval)';
    return 'native calls from JavaScript (socket and file syscalls, Buffer, crypto)';
  }
  if (u.startsWith('node:')) return 'Node.js internals (streams, net, buffer, timers)';
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '?');
    return `library ${pkg}`;
  }
  const d = u.lastIndexOf('/dist/');
  if (d >= 0) {
    const dir = u.slice(d + '/dist/'.length).split('/')[0] ?? '?';
    return `tessera ${dir}/`;
  }
  return 'other';
}

export function isIdle(cf: CallFrame): boolean {
  return cf.url === '' && cf.functionName === '(idle)';
}

/** A frame's label for people: `name file:line` (file relative to tessera's dist/ or node_modules/). */
export function frameLabel(cf: CallFrame): string {
  const [name = '', where = ''] = frameKey(cf).split('\u0000');
  return where ? `${name} ${where}` : name;
}

function frameKey(cf: CallFrame): string {
  const where = cf.url !== '' ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : cf.lineNumber >= 0 ? `generated:${cf.lineNumber + 1}` : '';
  return `${cf.functionName || '(anonymous)'}\u0000${where}`;
}

function rowOf(key: string, ms: number, busyMs: number): ProfileRow {
  const [name = '', where = ''] = key.split('\u0000');
  return { name, where, ms, shareOfBusy: busyMs > 0 ? ms / busyMs : 0 };
}

function topRows(m: Map<string, number>, busyMs: number, n: number): ProfileRow[] {
  return [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, ms]) => rowOf(k, ms, busyMs));
}

/** Each sample's timestamp (µs, the profile's monotonic clock): startTime plus the deltas so far. */
export function sampleStamps(p: CpuProfile): number[] {
  let t = p.startTime;
  const stamps: number[] = new Array<number>(p.samples.length);
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    stamps[i] = t;
  }
  return stamps;
}

/** When sample i ends: the next sample's timestamp, the last one's at the profile's end (see the file comment). */
export function sampleEnd(p: CpuProfile, stamps: readonly number[], i: number): number {
  return i + 1 < stamps.length ? stamps[i + 1]! : Math.max(p.endTime, stamps[i]!);
}

/** Self time per profile node id (µs), DevTools' attribution (see the file comment). */
export function selfTimesUs(p: CpuProfile): Map<number, number> {
  const selfUs = new Map<number, number>();
  const stamps = sampleStamps(p);
  for (let i = 0; i < p.samples.length; i++) {
    const end = sampleEnd(p, stamps, i);
    const d = Math.max(0, end - stamps[i]!);
    const id = p.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + d);
  }
  return selfUs;
}

/** Busy/idle, self time by area, top functions by self time and tessera's by inclusive time. */
export function summarizeCpuProfile(p: CpuProfile, top = 15): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const selfUs = selfTimesUs(p);
  let idleUs = 0;
  let totalUs = 0;
  const areas = new Map<string, number>();
  const self = new Map<string, number>();
  for (const n of p.nodes) {
    const us = selfUs.get(n.id) ?? 0;
    if (us === 0) continue;
    totalUs += us;
    if (isIdle(n.callFrame)) {
      idleUs += us;
      continue;
    }
    const a = areaOf(n.callFrame);
    areas.set(a, (areas.get(a) ?? 0) + us / 1000);
    const k = frameKey(n.callFrame);
    self.set(k, (self.get(k) ?? 0) + us / 1000);
  }
  const busyMs = (totalUs - idleUs) / 1000;

  // Inclusive time of tessera's own functions: a depth-first walk from the root(s) keeps how many
  // times each key is on the current path, so recursion counts once.
  const inclusive = new Map<string, number>();
  const children = new Set<number>();
  for (const n of p.nodes) for (const c of n.children ?? []) children.add(c);
  const onPath = new Map<string, number>();
  const subtreeUs = new Map<number, number>();
  // Post-order sums without recursion (deep stacks would overflow the JS stack).
  for (const root of p.nodes.filter((n) => !children.has(n.id))) {
    const stack: { id: number; entered: boolean }[] = [{ id: root.id, entered: false }];
    while (stack.length > 0) {
      const at = stack[stack.length - 1]!;
      const node = byId.get(at.id);
      if (!node) {
        stack.pop();
        continue;
      }
      const own = node.callFrame.url.includes('/dist/');
      const key = own ? frameKey(node.callFrame) : '';
      if (!at.entered) {
        at.entered = true;
        if (own) onPath.set(key, (onPath.get(key) ?? 0) + 1);
        for (const c of node.children ?? []) stack.push({ id: c, entered: false });
        continue;
      }
      stack.pop();
      let sum = selfUs.get(node.id) ?? 0;
      for (const c of node.children ?? []) sum += subtreeUs.get(c) ?? 0;
      subtreeUs.set(node.id, sum);
      if (own) {
        const k = onPath.get(key) ?? 1;
        if (k === 1) inclusive.set(key, (inclusive.get(key) ?? 0) + sum / 1000);
        if (k <= 1) onPath.delete(key);
        else onPath.set(key, k - 1);
      }
    }
  }
  return {
    wallMs: (p.endTime - p.startTime) / 1000,
    busyMs,
    idleMs: idleUs / 1000,
    areas: [...areas].sort((a, b) => b[1] - a[1]).map(([k, ms]) => ({ name: k, where: '', ms, shareOfBusy: busyMs > 0 ? ms / busyMs : 0 })),
    selfTop: topRows(self, busyMs, top),
    inclusiveTop: topRows(inclusive, busyMs, top),
  };
}

const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
const ms0 = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 0 });

/** Markdown tables of a summary. */
export function renderProfileSummary(s: ProfileSummary, title: string, file?: string): string {
  const lines: string[] = [];
  lines.push(`### ${title}`, '');
  const busyCores = s.wallMs > 0 ? s.busyMs / s.wallMs : 0;
  lines.push(
    `${file ? `Profile \`${file}\`: ` : ''}${(s.wallMs / 1000).toFixed(1)} s of the main thread, busy ${ms0(s.busyMs)} ms (${busyCores.toFixed(2)} of a core), idle ${pct(s.wallMs > 0 ? s.idleMs / s.wallMs : 0)}. Shares are of the busy time. Only the JavaScript thread is sampled: RocksDB writes and fsyncs on the thread pool, and the kernel's side of syscalls made elsewhere, are not in it; a sample inside a syscall (e.g. \`writev\`) includes the time the kernel spent on it, and time the thread waited for a core.`,
    '',
  );
  lines.push('| area (self time) | ms | share |', '|---|---:|---:|');
  for (const r of s.areas) lines.push(`| ${r.name} | ${ms0(r.ms)} | ${pct(r.shareOfBusy)} |`);
  lines.push('', '| function (self time) | where | ms | share |', '|---|---|---:|---:|');
  for (const r of s.selfTop) lines.push(`| ${r.name} | ${r.where || 'native'} | ${ms0(r.ms)} | ${pct(r.shareOfBusy)} |`);
  lines.push('', "| tessera function (inclusive: itself and what it calls) | where | ms | share |", '|---|---|---:|---:|');
  for (const r of s.inclusiveTop) lines.push(`| ${r.name} | ${r.where} | ${ms0(r.ms)} | ${pct(r.shareOfBusy)} |`);
  return lines.join('\n') + '\n';
}

/** Read, summarise and render one .cpuprofile file (the parsed profile comes back too, for a flame graph). */
export function summarizeProfileFile(file: string, top = 15): { profile: CpuProfile; summary: ProfileSummary; markdown: string } {
  const profile = parseCpuProfile(fs.readFileSync(file, 'utf8'), file);
  const summary = summarizeCpuProfile(profile, top);
  return { profile, summary, markdown: renderProfileSummary(summary, 'Where the profiled thread spent its time (V8 CPU profile)', path.basename(file)) };
}
