/**
 * Pure parts of the verdict and its report: counts, unavailability per fault window, the vacuity rule
 * (a history counts only with >= 1,000 ok operations and >= 1 applied fault window), and the Markdown.
 */
import type { DriverKind } from '../cluster-spec';
import { countOps, failReasons, type FailReason, type HistoryOp, type OpCounts } from './history';
import type { FaultWindow } from './nemesis';
import type { WorkloadVerdict } from './workload';
import type { ConvergenceReport } from './replica-convergence';
import type { DrainReport } from './intents-drain';

export const MIN_OK_OPS = 1_000;
export const MIN_FAULT_WINDOWS = 1;

export type VerdictWord = 'valid' | 'INVALID' | 'vacuous' | 'unknown' | 'unavailable';

export interface FaultUnavailability {
  kind: string;
  target: string;
  note?: string;
  skipped?: string;
  windowMs: number;
  /** Longest stretch without an ok completion that overlaps the window (from its start to 2 s after its end). */
  longestGapMs: number;
  okInWindow: number;
  /** Completions inside the window that failed definitely / ended unknown. */
  failInWindow: number;
  infoInWindow: number;
}

export interface WorkloadReport {
  workload: string;
  verdict: VerdictWord;
  why: string;
  counts: OpCounts;
  /** Failed and unknown completions by reason (error code), most frequent first. */
  failReasons?: FailReason[];
  anomalies: Record<string, number>;
  lostWrites: number;
  faults: FaultUnavailability[];
  details: string[];
  seed: number;
  timeMs: number;
  /** Set when the run applied a fault outside what the database promises to survive (skew-beyond). */
  unsafe?: string;
  /** Who ran the cluster (process: child processes on loopback; docker: a Docker lab). */
  driver?: DriverKind;
  /** Masters of the cluster when more than one (the sys catalog then fails over under the nemesis). */
  masters?: number;
  /** Isolation of the workload's transactions when not snapshot (serializable). */
  isolation?: 'serializable';
  /** After the final read: whether every replica of every tablet showed the same rows (replica-convergence.ts). */
  convergence?: ConvergenceReport;
  /** The same check at the hybrid time of the middle of the run (the replicas' MVCC history must agree too). */
  convergenceMidRun?: ConvergenceReport & { readHt: string };
  /** After the convergence checks: whether every replica let go of every transaction's provisional records (intents-drain.ts). */
  drain?: DrainReport;
}

/**
 * Whether a run in progress may end early: its history already counts (>= MIN_OK_OPS ok operations
 * and >= MIN_FAULT_WINDOWS applied windows), and the last of those windows ended at least
 * recoveryMs ago, so the recovery after it is in the history too.
 */
export function historyCounts(okOps: number, windows: readonly FaultWindow[], nowNs: number, recoveryMs: number): boolean {
  if (okOps < MIN_OK_OPS) return false;
  return windows.filter((w) => !w.skipped && w.endNs > 0 && nowNs - w.endNs >= recoveryMs * 1e6).length >= MIN_FAULT_WINDOWS;
}

export function unavailability(history: readonly HistoryOp[], windows: readonly FaultWindow[]): FaultUnavailability[] {
  const okTimes = history.filter((o) => o.type === 'ok').map((o) => o.time);
  return windows.map((w) => {
    const from = w.startNs;
    const to = w.endNs + 2e9;
    let last = from;
    let gap = 0;
    let okIn = 0;
    let failIn = 0;
    let infoIn = 0;
    for (const o of history) {
      if (o.time < from || o.time > w.endNs) continue;
      if (o.type === 'fail') failIn++;
      else if (o.type === 'info') infoIn++;
    }
    for (const t of okTimes) {
      if (t < from) continue;
      if (t > to) break;
      if (t <= w.endNs) okIn++;
      gap = Math.max(gap, t - last);
      last = t;
    }
    gap = Math.max(gap, Math.min(to, okTimes.length ? Math.max(last, okTimes[okTimes.length - 1]!) : to) - last);
    return { kind: w.kind, target: w.target, ...(w.note ? { note: w.note } : {}), ...(w.skipped ? { skipped: w.skipped } : {}), windowMs: Math.round((w.endNs - w.startNs) / 1e6), longestGapMs: Math.round(gap / 1e6), okInWindow: okIn, failInWindow: failIn, infoInWindow: infoIn };
  });
}

export function judge(workload: string, history: readonly HistoryOp[], windows: readonly FaultWindow[], v: WorkloadVerdict, seed: number, timeMs: number): WorkloadReport {
  const counts = countOps(history);
  const applied = windows.filter((w) => !w.skipped).length;
  const beyond = windows.filter((w) => !w.skipped && w.kind === 'skew-beyond').length;
  const unsafe = beyond ? `${beyond} clock-skew window(s) beyond max_clock_skew_usec: an unsafe configuration, where stale reads are documented behaviour` : undefined;
  let verdict: VerdictWord;
  let why: string;
  if (!v.valid) {
    verdict = 'INVALID';
    why = `anomalies: ${Object.entries(v.anomalies).map(([k, n]) => `${k}=${n}`).join(', ') || 'see details'}${unsafe ? ` (under ${unsafe})` : ''}`;
  } else if (counts.ok < MIN_OK_OPS || applied < MIN_FAULT_WINDOWS) {
    verdict = 'vacuous';
    why = `needs >= ${MIN_OK_OPS} ok ops and >= ${MIN_FAULT_WINDOWS} applied fault window(s); had ${counts.ok} ok ops and ${applied} window(s)`;
  } else if (v.vacuous) {
    verdict = 'vacuous';
    why = v.vacuous;
  } else if (v.inconclusive) {
    verdict = 'unknown';
    why = v.inconclusive;
  } else {
    verdict = 'valid';
    why = `${counts.ok} ok ops under ${applied} fault window(s), no anomaly`;
  }
  return { workload, verdict, why, counts, failReasons: failReasons(history), anomalies: v.anomalies, lostWrites: v.lostWrites, faults: unavailability(history, windows), details: v.details, seed, timeMs, ...(unsafe ? { unsafe } : {}) };
}

export function unavailableReport(workload: string, why: string, seed: number, timeMs: number): WorkloadReport {
  return { workload, verdict: 'unavailable', why, counts: { ok: 0, fail: 0, info: 0 }, anomalies: {}, lostWrites: 0, faults: [], details: [], seed, timeMs };
}

export function verdictLine(r: WorkloadReport): string {
  const an = Object.entries(r.anomalies).map(([k, n]) => `${k}=${n}`).join(',') || 'none';
  const tags = [...(r.driver === 'docker' ? ['docker'] : []), ...((r.masters ?? 1) > 1 ? [`${r.masters} masters`] : []), ...(r.isolation ? [r.isolation] : [])];
  return `${r.workload}${tags.length ? ` [${tags.join(', ')}]` : ''}: ${r.verdict}${r.unsafe ? ' (UNSAFE CONFIGURATION)' : ''} — ok ${r.counts.ok} / fail ${r.counts.fail} / info ${r.counts.info}; anomalies ${an}; lost writes ${r.lostWrites}; faults ${r.faults.filter((f) => !f.skipped).length} (${r.faults.filter((f) => f.skipped).length} skipped) — ${r.why}`;
}

export function markdownReport(reports: readonly WorkloadReport[], meta: { nemesis: string; command: string; driver?: DriverKind }): string {
  const driver = meta.driver ?? reports.find((r) => r.driver)?.driver ?? 'process';
  const how = driver === 'docker' ? 'a Docker lab of the run, one container per node; kill, pause and partition through docker kill, pause and network disconnect' : 'child processes on loopback';
  const out: string[] = ['# tessera verify', '', `Command: \`${meta.command}\``, `Nemesis: ${meta.nemesis}`, `Driver: ${driver} — ${how}`, ''];
  for (const r of reports) {
    out.push(`## ${r.workload}: ${r.verdict}`, '', r.why, '', `seed ${r.seed}, ${r.timeMs} ms, ${r.driver ?? driver} driver, ${r.masters ?? 1} master(s)${r.isolation ? `, ${r.isolation} transactions` : ''}; ok ${r.counts.ok}, fail ${r.counts.fail}, info ${r.counts.info}; lost writes ${r.lostWrites}`, '');
    if (r.failReasons?.length) {
      out.push(`Failed / unknown operations by reason: ${r.failReasons.map((f) => `${f.reason} ${f.fail} / ${f.info}`).join(', ')}`, '');
    }
    const an = Object.entries(r.anomalies);
    out.push(`Anomalies: ${an.length ? an.map(([k, n]) => `${k} ${n}`).join(', ') : 'none'}`, '');
    if (r.unsafe) out.push(`**Unsafe configuration:** ${r.unsafe}.`, '');
    if (r.faults.length) {
      out.push('Unavailability per fault window (the gap runs from the window\'s start to 2 s after its end):', '');
      out.push('| fault | target | window ms | ok / fail / info in window | longest gap without ok (ms) | note |', '|---|---|---|---|---|---|');
      for (const f of r.faults) out.push(`| ${f.kind} | ${f.target} | ${f.windowMs} | ${f.okInWindow} / ${f.failInWindow} / ${f.infoInWindow} | ${f.longestGapMs} | ${f.skipped ? `SKIPPED: ${f.skipped}` : f.note ?? ''} |`);
      out.push('');
    }
    for (const d of r.details) out.push(`- ${d}`);
    out.push('');
  }
  return out.join('\n');
}
