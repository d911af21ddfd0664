/**
 * Pure: the fault schedule of a run, drawn from a seed so a failing run replays with the same faults
 * at the same offsets. Faults never overlap (one window at a time, with quiet gaps between) so each
 * anomaly or unavailability can be pinned to the fault that was active.
 */
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import { SeededRng } from '../../common/rng';

/**
 * `skew` offsets one node's clock by at most half of max_clock_skew_usec (a configuration the
 * database promises to handle); `skew-beyond` goes past it (1.5x to 4x), an unsafe configuration in
 * which stale reads are documented behaviour, so it is never part of `all` and must be named.
 * `alter` is not a fault but a disturbance: ALTER TABLE on the workload's table (a column added at the
 * window's start, dropped at its end), so every client meets SCHEMA_VERSION_MISMATCH and rebuilds
 * its operations while the history is recorded.
 * `bridge` is a partial partition (Jepsen's bridge): two nodes stop exchanging Raft traffic and
 * heartbeats with each other while the third still reaches both — a follower that no longer hears its
 * leader, with a majority that does. `rebuild` is a membership change under load (Jepsen's member
 * nemesis, the way tessera does it): one replica of a tablet — of the workload's table, or a status
 * tablet of `transactions` — fails as a storage failure would (TEST_fail_tablet_replica), and the
 * master removes it from Raft, deletes it, creates it afresh and adds it back, the copy coming from a
 * healthy replica (remote bootstrap: RegularDB, IntentsDB, the retryable requests). `bridge` and
 * `rebuild` are not part of `all` (the seeds of recorded runs keep their schedules) and must be named.
 * `split` (docs/splitting.md) splits a random tablet of the workload's table at a random point (a
 * random hash code inside a hash tablet's range; the middle of the data for a range tablet) under
 * the load; part of `all` (not of the default list) since bank, append and register were valid
 * under it on three seeds (bench/results/2026-12-07-split.md), except for the lock workload: row
 * locks are not carried into a split's children (docs/splitting.md), so it never runs under it.
 */
export const NEMESIS_KINDS = ['kill', 'pause', 'partition', 'skew', 'stepdown', 'alter', 'skew-beyond', 'bridge', 'rebuild', 'split'] as const;
export type NemesisKind = (typeof NEMESIS_KINDS)[number];
/** What `all` means: every fault the database must survive without an anomaly. */
export const SAFE_NEMESIS_KINDS: readonly NemesisKind[] = ['kill', 'pause', 'partition', 'skew', 'stepdown', 'alter'];
/** `all`: the safe faults and tablet splits (the default list stays SAFE_NEMESIS_KINDS, so default runs keep their schedules). */
export const ALL_NEMESIS_KINDS: readonly NemesisKind[] = [...SAFE_NEMESIS_KINDS, 'split'];
/** The cluster's max_clock_skew_usec (verify clusters run with the default), in ms. */
export const DEFAULT_MAX_CLOCK_SKEW_MS = MAX_CLOCK_SKEW_USEC.default / 1000;
/** skew stays within [low, high] x max skew; skew-beyond within its own range. */
export const SKEW_WITHIN_FRACTION: readonly [number, number] = [0.1, 0.5];
export const SKEW_BEYOND_FACTOR: readonly [number, number] = [1.5, 4];

/** Which server a fault hits: the master, a tserver (by node index), or the leader of a tablet. */
export type FaultTarget = { role: 'master' } | { role: 'tserver'; node: number } | { role: 'leader' };

export interface ScheduledFault {
  kind: NemesisKind;
  target: FaultTarget;
  /** Offset from the start of the run. */
  startMs: number;
  durationMs: number;
  /** skew, skew-beyond: the offset applied to the target node's clock (ms, either sign). */
  skewMs?: number;
  /** bridge: the other node of the cut is (target node + peerOffset) mod tservers. */
  peerOffset?: number;
  /** rebuild: a replica of a status tablet (true) or of the workload's table. */
  statusTablet?: boolean;
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
  /** Same as listing `skew-beyond` in kinds (the older spelling, `--skew_beyond`). */
  skewBeyond?: boolean;
  /** The cluster's max_clock_skew_usec in ms (default: the flag's default). */
  maxClockSkewMs?: number;
}

/** Bound on windows in one schedule (a long run with tiny windows must not build a huge list). */
export const SCHEDULE_FAULTS_MAX = 10_000;

export function parseNemesisKinds(list: string): NemesisKind[] {
  const out: NemesisKind[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'none') continue;
    if (raw === 'all') {
      out.push(...ALL_NEMESIS_KINDS);
      continue;
    }
    if (!(NEMESIS_KINDS as readonly string[]).includes(raw)) throw new Error(`unknown nemesis '${raw}' (one of ${NEMESIS_KINDS.join(', ')}, all, none; all = ${ALL_NEMESIS_KINDS.join(',')})`);
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
  const kinds: NemesisKind[] = [...new Set<NemesisKind>([...o.kinds, ...(o.skewBeyond ? (['skew-beyond'] as const) : [])])];
  if (kinds.length === 0) return out;
  const maxSkewMs = o.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS;
  let t = between(gapLo, gapHi);
  while (out.length < SCHEDULE_FAULTS_MAX) {
    const dur = between(winLo, winHi);
    if (t + dur > o.timeMs - tail) break;
    const kind = kinds[rng.int(kinds.length)]!;
    const tserverTarget: FaultTarget = { role: 'tserver', node: rng.int(o.tservers) };
    let target: FaultTarget = tserverTarget;
    // Partitions cut off one node (with 3 nodes that is also "halves") or the node leading a tablet.
    if (kind === 'stepdown' || (kind === 'partition' && rng.chance(0.3)) || (kind === 'bridge' && rng.chance(0.5))) target = { role: 'leader' };
    else if ((kind === 'kill' || kind === 'pause') && rng.chance(0.2)) target = { role: 'master' };
    const f: ScheduledFault = { kind, target, startMs: t, durationMs: dur };
    if (kind === 'skew' || kind === 'skew-beyond') {
      const [lo, hi] = kind === 'skew' ? SKEW_WITHIN_FRACTION : SKEW_BEYOND_FACTOR;
      const mag = between(Math.max(1, Math.round(lo * maxSkewMs)), Math.max(1, Math.round(hi * maxSkewMs)));
      f.skewMs = rng.chance(0.5) ? mag : -mag;
    }
    if (kind === 'bridge') f.peerOffset = 1 + rng.int(Math.max(1, o.tservers - 1));
    if (kind === 'rebuild') {
      f.statusTablet = rng.chance(0.3);
      if (rng.chance(0.4)) f.target = { role: 'leader' };
    }
    out.push(f);
    t += dur + between(gapLo, gapHi);
  }
  return out;
}

export function describeTarget(t: FaultTarget): string {
  return t.role === 'tserver' ? `tserver ${t.node}` : t.role;
}
