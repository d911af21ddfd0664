/**
 * Joins the stage-trace files of one run (common/stage-trace.ts: TESSERA_STAGE_TRACE=<dir> on the
 * client and every server) into the stages of each single-row write, and prints their percentiles.
 * Meant for low concurrency (c1): each write is followed by Raft index from the leader's `propose`,
 * and the stages without an index (RPC frames, transport flushes) are the nearest ones in time on
 * the right process. Usage: `node dist/bench/stage-breakdown.js <dir> [--skip-first-ms N]`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

interface Ev {
  t: number;
  index: number;
}

/** One process's events: stage → group → events in time order. */
type Proc = Map<string, Map<string, Ev[]>>;

export function readTraceDir(dir: string): Map<string, Proc> {
  const procs = new Map<string, Proc>();
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.trace')) continue;
    const p: Proc = new Map();
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      const [ns, stage, group, index] = line.split(' ');
      if (!ns || !stage || !group || index === undefined) continue;
      let byGroup = p.get(stage);
      if (!byGroup) p.set(stage, (byGroup = new Map()));
      let evs = byGroup.get(group);
      if (!evs) byGroup.set(group, (evs = []));
      evs.push({ t: Number(BigInt(ns) / 1000n) / 1000, index: Number(index) });
    }
    procs.set(name.replace(/\.trace$/, ''), p);
  }
  return procs;
}

function events(p: Proc, stage: string, group: string): Ev[] {
  return p.get(stage)?.get(group) ?? [];
}

/** First index ≥ at with time ≥ t (binary search by time). */
function firstAtOrAfter(evs: Ev[], t: number): number {
  let lo = 0;
  let hi = evs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (evs[mid]!.t < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first event of `stage` in `group` at or after `t` whose index is at least `index` (within a bound). */
function after(p: Proc | undefined, stage: string, group: string, index: number, t: number | undefined): number | undefined {
  if (!p || t === undefined) return undefined;
  const evs = events(p, stage, group);
  const from = firstAtOrAfter(evs, t);
  for (let i = from; i < evs.length && i < from + 64; i++) if (evs[i]!.index >= index) return evs[i]!.t;
  return undefined;
}

/** The last event of `stage` (any group) at or before `t`, within `windowMs`. */
function lastBefore(p: Proc | undefined, stage: string, group: string, t: number | undefined, windowMs: number): number | undefined {
  if (!p || t === undefined) return undefined;
  const evs = events(p, stage, group);
  const i = firstAtOrAfter(evs, t + 1e-6) - 1;
  return i >= 0 && t - evs[i]!.t <= windowMs ? evs[i]!.t : undefined;
}

function firstAfterAny(p: Proc | undefined, stage: string, group: string, t: number | undefined, windowMs: number): number | undefined {
  if (!p || t === undefined) return undefined;
  const evs = events(p, stage, group);
  const i = firstAtOrAfter(evs, t);
  return i < evs.length && evs[i]!.t - t <= windowMs ? evs[i]!.t : undefined;
}

/** Named instants of one write (ms, monotonic); a missing one is undefined. */
type Instants = Record<string, number | undefined>;

const WINDOW_MS = 50;

function leaderInstants(l: Proc, group: string, index: number, propose: number): Instants {
  const i: Instants = { propose };
  i['write.start'] = lastBefore(l, 'write.start', group, propose, WINDOW_MS);
  i['leader rpc.in'] = lastBefore(l, 'rpc.in.Write', '-', i['write.start'] ?? propose, WINDOW_MS);
  i['leader append'] = after(l, 'append', group, index, propose);
  i['leader send'] = after(l, 'send.append', group, index, propose);
  i['leader flush'] = firstAfterAny(l, 'transport.flush', '-', i['leader send'], WINDOW_MS);
  i['leader synced'] = after(l, 'synced', group, index, i['leader append']);
  i['leader ack in'] = after(l, 'step.appendResp', group, index, propose);
  i['leader ack frame'] = lastBefore(l, 'rpc.in.RaftBatch', '-', i['leader ack in'], WINDOW_MS);
  const c1 = after(l, 'commit', group, index, propose);
  const c2 = after(l, 'commit.early', group, index, propose);
  i['leader commit'] = c1 === undefined ? c2 : c2 === undefined ? c1 : Math.min(c1, c2);
  i['leader apply.start'] = after(l, 'apply.start', group, index, i['leader commit']);
  i['leader apply.end'] = after(l, 'apply.end', group, index, i['leader commit']);
  // From the commit: a write answered at commit (tablet_write_answer_at_commit) ends before its apply.
  i['write.end'] = firstAfterAny(l, 'write.end', group, i['leader commit'], WINDOW_MS);
  i['leader rpc.out'] = firstAfterAny(l, 'rpc.out', '-', i['write.end'], WINDOW_MS);
  i['leader send commit'] = after(l, 'send.append0', group, index, i['leader commit']);
  return i;
}

function followerInstants(f: Proc, group: string, index: number, from: number): Instants {
  const i: Instants = {};
  i['step'] = after(f, 'step.append', group, index, from);
  i['frame in'] = lastBefore(f, 'rpc.in.RaftBatch', '-', i['step'], WINDOW_MS);
  i['append'] = after(f, 'append', group, index, i['step']);
  i['synced'] = after(f, 'synced', group, index, i['append']);
  i['send ack'] = after(f, 'send.appendResp', group, index, i['step']);
  i['flush ack'] = firstAfterAny(f, 'transport.flush', '-', i['send ack'], WINDOW_MS);
  i['learns commit'] = after(f, 'commit', group, index, i['step']);
  i['apply.end'] = after(f, 'apply.end', group, index, i['step']);
  return i;
}

/** Stages as [name, from instant, to instant]; the follower's are prefixed `f:` (the quicker follower). */
const STAGES: Array<[string, string, string]> = [
  ['client → leader frame', 'client call', 'leader rpc.in'],
  ['leader: frame → write path', 'leader rpc.in', 'write.start'],
  ['leader: write path → propose', 'write.start', 'propose'],
  ['leader: propose → log append (turn)', 'propose', 'leader append'],
  ['leader: append → AppendEntries queued', 'leader append', 'leader send'],
  ['leader: queued → frame written (turn)', 'leader send', 'leader flush'],
  ['leader: own fdatasync (append → synced)', 'leader append', 'leader synced'],
  ['network: leader frame → follower frame', 'leader flush', 'f:frame in'],
  ['follower: frame → step', 'f:frame in', 'f:step'],
  ['follower: step → log append (turn)', 'f:step', 'f:append'],
  ['follower: fdatasync (append → synced)', 'f:append', 'f:synced'],
  ['follower: synced → ack queued', 'f:synced', 'f:send ack'],
  ['follower: ack queued → frame written (turn)', 'f:send ack', 'f:flush ack'],
  ['network: follower ack frame → leader frame', 'f:flush ack', 'leader ack frame'],
  ['leader: ack frame → step', 'leader ack frame', 'leader ack in'],
  ['leader: ack step → commit (to apply stage)', 'leader ack in', 'leader commit'],
  ['leader: commit → apply start', 'leader commit', 'leader apply.start'],
  ['leader: apply (RocksDB write)', 'leader apply.start', 'leader apply.end'],
  ['leader: commit → write path done (after the apply, or at commit)', 'leader commit', 'write.end'],
  ['leader: write path done → reply frame', 'write.end', 'leader rpc.out'],
  ['leader → client reply', 'leader rpc.out', 'client answer'],
  ['total: client call → answer', 'client call', 'client answer'],
  ['leader: propose → commit', 'propose', 'leader commit'],
  ['follower learns commit (after leader commit)', 'leader commit', 'f:learns commit'],
  ['follower applied (after leader commit)', 'leader commit', 'f:apply.end'],
];

function count(p: Proc, stage: string): number {
  let n = 0;
  for (const evs of p.get(stage)?.values() ?? []) n += evs.length;
  return n;
}

/** Every traced write: its instants (leader, the quicker follower, client). */
export function joinWrites(procs: Map<string, Proc>, skipFirstMs: number): Instants[] {
  const all = [...procs.values()];
  const client = all.filter((p) => count(p, 'rpc.call.Write') > 0 && count(p, 'propose') === 0).sort((a, b) => count(b, 'rpc.call.Write') - count(a, 'rpc.call.Write'))[0];
  const out: Instants[] = [];
  let t0 = Infinity;
  for (const p of all) for (const evs of p.get('propose')?.values() ?? []) if (evs.length > 0) t0 = Math.min(t0, evs[0]!.t);
  for (const leader of all) {
    for (const [group, proposes] of leader.get('propose') ?? []) {
      const followers = all.filter((p) => p !== leader && events(p, 'step.append', group).length > 0);
      for (const pr of proposes) {
        if (pr.t < t0 + skipFirstMs) continue;
        const i = leaderInstants(leader, group, pr.index, pr.t);
        if (i['write.start'] === undefined) continue; // not a client write (a no-op, a status record, …)
        const fs = followers.map((f) => followerInstants(f, group, pr.index, pr.t)).filter((x) => x['send ack'] !== undefined);
        fs.sort((a, b) => a['send ack']! - b['send ack']!);
        for (const [k, v] of Object.entries(fs[0] ?? {})) i[`f:${k}`] = v;
        i['client call'] = lastBefore(client, 'rpc.call.Write', '-', i['leader rpc.in'], WINDOW_MS);
        i['client answer'] = firstAfterAny(client, 'rpc.answer.Write', '-', i['leader rpc.out'], WINDOW_MS);
        out.push(i);
      }
    }
  }
  return out;
}

function pct(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export function renderBreakdown(writes: Instants[]): string {
  const rows = ['| stage | p50 ms | p90 ms | p99 ms | writes |', '|---|---:|---:|---:|---:|'];
  for (const [name, a, b] of STAGES) {
    const d = writes.map((w) => (w[a] !== undefined && w[b] !== undefined ? w[b]! - w[a]! : NaN)).filter((x) => Number.isFinite(x));
    if (d.length === 0) {
      rows.push(`| ${name} | – | – | – | 0 |`);
      continue;
    }
    rows.push(`| ${name} | ${pct(d, 0.5).toFixed(3)} | ${pct(d, 0.9).toFixed(3)} | ${pct(d, 0.99).toFixed(3)} | ${d.length} |`);
  }
  return rows.join('\n');
}

function main(): void {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: stage-breakdown <trace dir> [--skip-first-ms N]\n');
    process.exit(2);
  }
  const k = process.argv.indexOf('--skip-first-ms');
  const skip = k > 0 ? Number(process.argv[k + 1]) : 0;
  const writes = joinWrites(readTraceDir(dir), skip);
  process.stdout.write(`${writes.length} writes\n${renderBreakdown(writes)}\n`);
}

if (require.main === module) main();
