/**
 * Pure: the fault schedule of a run, drawn from a seed so a failing run replays with the same faults
 * at the same offsets. Faults never overlap (one window at a time, with quiet gaps between) so each
 * anomaly or unavailability can be pinned to the fault that was active.
 */
import { SeededRng } from '../../common/rng';

export const NEMESIS_KINDS = ['kill', 'pause', 'partition', 'skew', 'stepdown'] as const;
export type NemesisKind = (typeof NEMESIS_KINDS)[number];

/** Which server a fault hits: the master, a tserver (by node index), or the leader of a tablet. */
export type FaultTarget = { role: 'master' } | { role: 'tserver'; node: number } | { role: 'leader' };

export interface ScheduledFault {
  kind: NemesisKind;
  target: FaultTarget;
  /** Offset from the start of the run. */
  startMs: number;
  durationMs: number;
  /** skew: the offset applied (ms; beyond max_clock_skew_usec when |skewMs| > 500). */
  skewMs?: number;
}

export interface ScheduleOptions {
  seed: number;
  kinds: readonly NemesisKind[];
  /** Total run time; the last window ends at least tailMs before it so the cluster recovers. */
  timeMs: number;
  tservers: number;
  /** Quiet time before the first fault and between faults. */
  gapMs?: [number, number];
  windowMs?: [number, number];
  tailMs?: number;
  /** Let skew faults go beyond max_clock_skew_usec (they may then legitimately break linearizability). */
  skewBeyond?: boolean;
}

/** Bound on windows in one schedule (a long run with tiny windows must not build a huge list). */
export const SCHEDULE_FAULTS_MAX = 10_000;

export function parseNemesisKinds(list: string): NemesisKind[] {
  const out: NemesisKind[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'none') continue;
    if (raw === 'all') {
      out.push(...NEMESIS_KINDS);
      continue;
    }
    if (!(NEMESIS_KINDS as readonly string[]).includes(raw)) throw new Error(`unknown nemesis '${raw}' (one of ${NEMESIS_KINDS.join(', ')}, all, none)`);
    out.push(raw as NemesisKind);
  }
  return [...new Set(out)];
}

export function buildSchedule(o: ScheduleOptions): ScheduledFault[] {
  const rng = new SeededRng(o.seed);
  const [gapLo, gapHi] = o.gapMs ?? [1_000, 2_500];
  const [winLo, winHi] = o.windowMs ?? [2_000, 4_000];
  const tail = o.tailMs ?? 1_500;
  const between = (lo: number, hi: number): number => lo + rng.int(Math.max(1, hi - lo + 1));
  const out: ScheduledFault[] = [];
  if (o.kinds.length === 0) return out;
  let t = between(gapLo, gapHi);
  while (out.length < SCHEDULE_FAULTS_MAX) {
    const dur = between(winLo, winHi);
    if (t + dur > o.timeMs - tail) break;
    const kind = o.kinds[rng.int(o.kinds.length)]!;
    const tserverTarget: FaultTarget = { role: 'tserver', node: rng.int(o.tservers) };
    let target: FaultTarget = tserverTarget;
    // Partitions cut off one node (with 3 nodes that is also "halves") or the node leading a tablet.
    if (kind === 'stepdown' || (kind === 'partition' && rng.chance(0.3))) target = { role: 'leader' };
    else if ((kind === 'kill' || kind === 'pause') && rng.chance(0.2)) target = { role: 'master' };
    const f: ScheduledFault = { kind, target, startMs: t, durationMs: dur };
    if (kind === 'skew') {
      const mag = o.skewBeyond && rng.chance(0.5) ? between(800, 2_000) : between(50, 250);
      f.skewMs = rng.chance(0.5) ? mag : -mag;
    }
    out.push(f);
    t += dur + between(gapLo, gapHi);
  }
  return out;
}

export function describeTarget(t: FaultTarget): string {
  return t.role === 'tserver' ? `tserver ${t.node}` : t.role;
}
