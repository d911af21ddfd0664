/**
 * After a verification run: do all replicas of every tablet show the same data? Client histories
 * cannot see a follower that applied something differently (it serves no reads until it leads), so
 * this asks each replica directly. Every tserver's /api/v1/tablet-checksum?read_ht=HT digests the
 * rows the replica shows at hybrid time HT (intents resolved through the status tablets), whatever it
 * has moved to RegularDB so far or collected by history GC. One replica picks HT (its now), the
 * others read at the same HT. Each replica also digests the provisional records (intents) of the
 * transactions that no APPLY or REMOVE entry reached yet on it: replicas at one Raft applied index
 * must hold exactly the same ones, whatever each has applied of the committed ones.
 *
 * Judging one attempt (pure, judgeAttempt): equal digests → converged. Different digests from
 * replicas that applied the same Raft index, with no entry applied during their scans → a divergence
 * (reported only when it shows on DIVERGED_ATTEMPTS consecutive attempts). Anything else (a replica
 * missing, behind, erroring, or applying while it scanned) → ask again, until the deadline; what is
 * left then is reported unsettled, which is not an anomaly.
 */
import { getJson } from '../console-http';
import type { WorkloadVerdict } from './workload';

export interface ReplicaDigest {
  server: string;
  sha256: string;
  rows: number;
  appliedIndex: number;
  stable: boolean;
  pendingTxns: number;
  /**
   * Digest of the provisional records of the transactions no APPLY or REMOVE reached yet on this
   * replica (absent from a server that does not report it: then only rows are compared).
   */
  intents?: { sha256: string; txns: number; records: number };
}

export type AttemptResult = { kind: 'converged'; rows: number; openTxns: number } | { kind: 'diverged'; why: string; differing: string[] } | { kind: 'unsettled'; why: string };

export interface TabletConvergence {
  tabletId: string;
  table: string;
  result: 'converged' | 'diverged' | 'unsettled';
  /** converged: rows each replica shows; otherwise why. */
  rows?: number;
  /** converged: transactions whose provisional records every replica holds alike (none applied or removed there yet). */
  openTxns?: number;
  why?: string;
  /** diverged: the replicas (tserver names) outside the largest group of equal digests. */
  differing?: string[];
  attempts: number;
  /** Each replica's answer in the attempt that decided (converged or diverged), for a per-replica listing. */
  replicas?: ReplicaDigest[];
}

export interface ConvergenceReport {
  tablets: number;
  converged: number;
  diverged: TabletConvergence[];
  unsettled: TabletConvergence[];
  /** The converged tablets, with each replica's answer. */
  convergedTablets?: TabletConvergence[];
  /** Rows shown by the converged tablets (summed). */
  rows: number;
  /** Open transactions whose provisional records the converged tablets' replicas hold alike (summed over tablets). */
  openTxns?: number;
  ms: number;
}

/** A mismatch at equal applied indexes counts after this many consecutive attempts show it. */
export const DIVERGED_ATTEMPTS = 3;
const ATTEMPT_PAUSE_MS = 250;
const REQUEST_TIMEOUT_MS = 30_000;

/** One attempt's verdict from the replicas' answers (pure). */
export function judgeAttempt(digests: readonly ReplicaDigest[], replicationFactor: number): AttemptResult {
  if (digests.length < replicationFactor) return { kind: 'unsettled', why: `${digests.length} of ${replicationFactor} replicas answered` };
  const first = digests[0]!;
  const rowsEqual = digests.every((d) => d.sha256 === first.sha256 && d.rows === first.rows);
  // Provisional records count only when every replica reported them (a server of an older build does not).
  const withIntents = digests.every((d) => d.intents !== undefined);
  const intentsEqual = !withIntents || digests.every((d) => intentsKey(d) === intentsKey(first));
  if (rowsEqual && intentsEqual) return { kind: 'converged', rows: first.rows, openTxns: withIntents ? first.intents!.txns : 0 };
  // Provisional records are named when they differ or there are any (not "0 txn(s)" on every line).
  const showIntents = withIntents && (!intentsEqual || digests.some((d) => d.intents!.txns > 0));
  const list = digests
    .map((d) => `${d.server}: ${d.rows} rows, sha256 ${d.sha256.slice(0, 12)}${showIntents && d.intents ? `, provisional records of ${d.intents.txns} txn(s): ${d.intents.records}, sha256 ${d.intents.sha256.slice(0, 12)}` : ''}, applied index ${d.appliedIndex}${d.stable ? '' : ' (applied while scanning)'}`)
    .join('; ');
  if (digests.some((d) => !d.stable)) return { kind: 'unsettled', why: `a replica applied entries while it scanned — ${list}` };
  if (digests.some((d) => d.appliedIndex !== first.appliedIndex)) return { kind: 'unsettled', why: `replicas at different applied indexes — ${list}` };
  // The replicas outside the largest group of equal digests (all of them when no group is larger).
  const groups = new Map<string, string[]>();
  for (const d of digests) {
    const k = `${d.sha256}/${d.rows}/${withIntents ? intentsKey(d) : ''}`;
    groups.set(k, [...(groups.get(k) ?? []), d.server]);
  }
  const sizes = [...groups.values()].map((g) => g.length).sort((a, b) => b - a);
  const major = sizes[0]! > (sizes[1] ?? 0) ? [...groups.values()].find((g) => g.length === sizes[0])! : [];
  const differing = digests.map((d) => d.server).filter((n) => !major.includes(n));
  const who = major.length ? `${differing.join(', ')} differ${differing.length === 1 ? 's' : ''} from ${major.join(', ')}` : 'no majority';
  const what = rowsEqual ? 'hold different provisional records (intents of transactions not yet committed or aborted there)' : 'show different rows';
  return { kind: 'diverged', why: `replicas at the same applied index ${what} (${who}) — ${list}`, differing };
}

/** The part of a digest naming a replica's pending provisional records ('' when it did not report them). */
function intentsKey(d: ReplicaDigest): string {
  return d.intents ? `${d.intents.sha256}/${d.intents.txns}/${d.intents.records}` : '';
}

export interface ConvergenceOptions {
  /** Console base URLs of the tservers (all of them should be up). */
  tservers: ReadonlyArray<{ name: string; webUrl: string }>;
  /** Replicas each tablet must have (per tablet: from its Raft config). */
  replicationFactor: number | ((tabletId: string) => number);
  timeoutMs: number;
  /** Only these tablets (default: every tablet the tservers host). */
  tablets?: ReadonlySet<string>;
  /**
   * Read this many ms before the first replica's now (default 0): on a cluster taking writes the
   * replicas a little behind have applied everything up to there, so they compare too.
   */
  behindMs?: number;
  /** Read every replica at this hybrid time instead (e.g. one in the middle of a run: the history must agree too). */
  readHt?: bigint;
  log?: (line: string) => void;
}

interface TabletsAnswer {
  tablets: Array<{ tabletId: string; table: string; state: string }>;
}

interface ChecksumAnswer {
  visible: { readHt: string; sha256: string; rows: number; pendingTxns: number; appliedIndex: number; stable: boolean; intents?: { sha256: string; txns: number; records: number } };
}

/** Bounded: every tablet is asked until it converges, diverges, or the deadline passes. */
export async function checkReplicaConvergence(o: ConvergenceOptions): Promise<ConvergenceReport> {
  const t0 = Date.now();
  const deadline = t0 + o.timeoutMs;
  const done = new Map<string, TabletConvergence>();
  const lastWhy = new Map<string, { table: string; why: string; attempts: number; divergedRun: number }>();
  while (Date.now() < deadline && o.tablets?.size !== 0) {
    // Who hosts what, asked again each round (a replica may be moving or bootstrapping).
    const hosts = new Map<string, { table: string; servers: Array<{ name: string; webUrl: string }> }>();
    await Promise.all(
      o.tservers.map(async (ts) => {
        const a = (await getJson(`${ts.webUrl}/api/v1/tablets`, REQUEST_TIMEOUT_MS).catch(() => undefined)) as TabletsAnswer | undefined;
        for (const t of a?.tablets ?? []) {
          if (t.state !== 'RUNNING' || (o.tablets && !o.tablets.has(t.tabletId))) continue;
          let h = hosts.get(t.tabletId);
          if (!h) hosts.set(t.tabletId, (h = { table: t.table, servers: [] }));
          h.servers.push(ts);
        }
      }),
    );
    for (const id of lastWhy.keys()) if (!hosts.has(id) && !done.has(id)) hosts.set(id, { table: lastWhy.get(id)!.table, servers: [] });
    const open = [...hosts].filter(([id]) => !done.has(id));
    if (open.length === 0 && hosts.size > 0) break;
    for (const [tabletId, h] of open) {
      const state = lastWhy.get(tabletId) ?? { table: h.table, why: '', attempts: 0, divergedRun: 0 };
      lastWhy.set(tabletId, state);
      state.attempts++;
      const rf = typeof o.replicationFactor === 'number' ? o.replicationFactor : o.replicationFactor(tabletId);
      const { result: r, digests } = await attempt(tabletId, h.servers, rf, o.readHt !== undefined ? String(o.readHt) : o.behindMs ? `now-${Math.round(o.behindMs)}` : 'now');
      if (r.kind === 'converged') {
        done.set(tabletId, { tabletId, table: h.table, result: 'converged', rows: r.rows, openTxns: r.openTxns, attempts: state.attempts, replicas: digests });
        continue;
      }
      state.why = r.why;
      // A replica's history GC collected that time: asking again cannot help.
      if (r.kind === 'unsettled' && r.why.includes('SNAPSHOT_TOO_OLD')) {
        done.set(tabletId, { tabletId, table: h.table, result: 'unsettled', why: r.why, attempts: state.attempts });
        continue;
      }
      state.divergedRun = r.kind === 'diverged' ? state.divergedRun + 1 : 0;
      if (state.divergedRun >= DIVERGED_ATTEMPTS) {
        done.set(tabletId, { tabletId, table: h.table, result: 'diverged', why: r.why, ...(r.kind === 'diverged' ? { differing: r.differing } : {}), attempts: state.attempts, replicas: digests });
        o.log?.(`replica convergence: tablet ${tabletId} (${h.table}) DIVERGED: ${r.why}`);
      }
    }
    if ([...hosts.keys()].every((id) => done.has(id)) && hosts.size > 0) break;
    await new Promise((r) => setTimeout(r, ATTEMPT_PAUSE_MS));
  }
  for (const [tabletId, s] of lastWhy) {
    if (!done.has(tabletId)) done.set(tabletId, { tabletId, table: s.table, result: 'unsettled', why: s.why || 'not asked before the deadline', attempts: s.attempts });
  }
  const all = [...done.values()];
  return {
    tablets: all.length,
    converged: all.filter((t) => t.result === 'converged').length,
    diverged: all.filter((t) => t.result === 'diverged'),
    unsettled: all.filter((t) => t.result === 'unsettled'),
    convergedTablets: all.filter((t) => t.result === 'converged'),
    rows: all.reduce((n, t) => n + (t.rows ?? 0), 0),
    openTxns: all.reduce((n, t) => n + (t.openTxns ?? 0), 0),
    ms: Date.now() - t0,
  };
}

/** Ask the first replica at `at` (a hybrid time, now or now-MS), then the others at the hybrid time it read at. */
async function attempt(tabletId: string, servers: ReadonlyArray<{ name: string; webUrl: string }>, rf: number, at: string): Promise<{ result: AttemptResult; digests: ReplicaDigest[] }> {
  if (servers.length === 0) return { result: { kind: 'unsettled', why: 'no tserver lists the tablet as RUNNING' }, digests: [] };
  const ask = async (s: { name: string; webUrl: string }, readHt: string): Promise<ReplicaDigest & { readHt: string }> => {
    const a = (await getJson(`${s.webUrl}/api/v1/tablet-checksum?id=${encodeURIComponent(tabletId)}&read_ht=${readHt}`, REQUEST_TIMEOUT_MS)) as ChecksumAnswer;
    const v = a.visible;
    return { server: s.name, sha256: v.sha256, rows: v.rows, appliedIndex: v.appliedIndex, stable: v.stable, pendingTxns: v.pendingTxns, readHt: v.readHt, ...(v.intents ? { intents: v.intents } : {}) };
  };
  try {
    const first = await ask(servers[0]!, at);
    const rest = await Promise.all(servers.slice(1).map((s) => ask(s, first.readHt)));
    const digests = [first, ...rest];
    return { result: judgeAttempt(digests, rf), digests };
  } catch (e) {
    return { result: { kind: 'unsettled', why: (e as Error).message }, digests: [] };
  }
}

/** One line for the report (`at`: what time the replicas were read at, when not their now). */
export function convergenceLine(r: ConvergenceReport, at?: string): string {
  const open = r.openTxns ? `, provisional records of ${r.openTxns} open transaction(s) alike` : '';
  const parts = [`${r.converged} of ${r.tablets} tablet(s) converged (${r.rows} rows, every replica showing the same at one hybrid time${open})`];
  if (r.diverged.length) parts.push(`DIVERGED: ${r.diverged.map((t) => `${t.tabletId} (${t.table}): ${t.why}`).join(' | ')}`);
  if (r.unsettled.length) parts.push(`not compared (replicas behind, missing or busy until the deadline, or the time below a history floor): ${r.unsettled.map((t) => `${t.tabletId} (${t.table}): ${t.why}`).join(' | ')}`);
  return `replica convergence${at ? ` ${at}` : ''}: ${parts.join('; ')} — ${r.ms} ms`;
}

/** The workload's verdict with the convergence check folded in: a divergence is an anomaly (pure). */
export function withConvergence(v: WorkloadVerdict, r: ConvergenceReport, at?: string): WorkloadVerdict {
  const details = [...v.details, convergenceLine(r, at)];
  if (r.diverged.length === 0) return { ...v, details };
  return { ...v, valid: false, anomalies: { ...v.anomalies, 'replica-divergence': (v.anomalies['replica-divergence'] ?? 0) + r.diverged.length }, details };
}
