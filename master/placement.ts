/**
 * Placement and balancing, pure: the cluster as the leader master sees it goes in, decisions come
 * out. The background round (catalog-manager.ts) carries them out through RPCs. Ties break on the
 * tserver uuid so the same input always gives the same output.
 */

export interface TServerLoad {
  uuid: string;
  /** Heartbeat within tserver_unresponsive_timeout_ms. */
  alive: boolean;
  /** Replicas the catalog assigns to it. */
  tablets: number;
  /** Tablets it currently leads (from reports). */
  leaders: number;
}

export interface TabletView {
  id: string;
  /** Tserver uuids the catalog assigns (voters). */
  replicas: string[];
  /** Reported leader uuid ('' when none is known). */
  leader: string;
  /** Table the tablet belongs to (leaders are balanced per table first); absent: one group. */
  table?: string;
  /** Replicas whose (live) tserver reports them FAILED (a storage failure stopped them). */
  failed?: readonly string[];
}

export type Move =
  /** Assign `target` instead of `dead` (catalog first; the round then fixes Raft and the hosts). */
  | { type: 'replace'; tabletId: string; dead: string; target: string }
  /** Ask the leader on `from` to hand leadership to `to`. */
  | { type: 'stepdown'; tabletId: string; from: string; to: string };

function byLoad(a: { tablets: number; uuid: string }, b: { tablets: number; uuid: string }): number {
  return a.tablets - b.tablets || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0);
}

/**
 * Replicas for `count` new tablets of replication factor `rf`: least-loaded live tservers first,
 * counting the replicas placed so far, so K tablets spread evenly. Throws nothing: the caller checked
 * rf <= live tservers; returns [] when that does not hold.
 */
export function placeNewTablets(tservers: readonly TServerLoad[], rf: number, count: number): string[][] {
  const live = tservers.filter((t) => t.alive).map((t) => ({ uuid: t.uuid, tablets: t.tablets }));
  if (rf < 1 || live.length < rf) return [];
  const out: string[][] = [];
  for (let i = 0; i < count; i++) {
    live.sort(byLoad);
    const chosen = live.slice(0, rf);
    for (const c of chosen) c.tablets++;
    // Rotate the order so the first replica (the likeliest first leader) differs between tablets.
    const uuids = chosen.map((c) => c.uuid);
    const r = i % rf;
    out.push([...uuids.slice(r), ...uuids.slice(0, r)]);
  }
  return out;
}

/**
 * Dead replicas to replace — on a dead tserver, or FAILED on a live one — one per tablet per round,
 * only where a live leader can carry out the change and a live tserver not already hosting the tablet
 * exists (least loaded first). (Without a spare tserver, the round re-creates a FAILED replica in
 * place instead: catalog-manager.ts.)
 */
export function planReplacements(tservers: readonly TServerLoad[], tablets: readonly TabletView[], movesMax: number): Move[] {
  const state = new Map(tservers.map((t) => [t.uuid, { uuid: t.uuid, alive: t.alive, tablets: t.tablets }]));
  const moves: Move[] = [];
  for (const t of [...tablets].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (moves.length >= movesMax) break;
    const dead = t.replicas.filter((u) => state.get(u)?.alive !== true || t.failed?.includes(u) === true).sort();
    if (dead.length === 0) continue;
    if (!t.leader || state.get(t.leader)?.alive !== true || !t.replicas.includes(t.leader) || t.failed?.includes(t.leader) === true) continue;
    const candidates = [...state.values()].filter((s) => s.alive && !t.replicas.includes(s.uuid)).sort(byLoad);
    const target = candidates[0];
    if (!target) continue;
    target.tablets++;
    moves.push({ type: 'replace', tabletId: t.id, dead: dead[0]!, target: target.uuid });
  }
  return moves;
}

/**
 * Leader balancing, per table first (like YugabyteDB's load balancer): a table whose tablets are led
 * mostly from one tserver loads that server whatever the cluster-wide counts say. A move either
 * evens out its table (the table's leader counts on `from` and `to` differ by at least 2), or evens
 * out the cluster (the cluster-wide counts differ by at least 2) while keeping its table within one
 * (they differ by at least 1 there). Table moves go first, the largest gap first; at most movesMax.
 *
 * Never ping-pongs: every table move lowers the sum over tables of the squared per-table counts, and
 * a cluster move leaves that sum as it is (table gap exactly 1) and lowers the cluster-wide sum of
 * squares, so the pair (table sum, cluster sum) falls with every move until no move qualifies.
 */
export function planLeaderMoves(tservers: readonly TServerLoad[], tablets: readonly TabletView[], movesMax: number): Move[] {
  const alive = new Set(tservers.filter((t) => t.alive).map((t) => t.uuid));
  const global = new Map<string, number>();
  const perTable = new Map<string, Map<string, number>>();
  const tableOf = (t: TabletView): Map<string, number> => {
    const k = t.table ?? '';
    let m = perTable.get(k);
    if (!m) perTable.set(k, (m = new Map()));
    return m;
  };
  const count = (m: Map<string, number>, u: string): number => m.get(u) ?? 0;
  const bump = (m: Map<string, number>, u: string, d: number): void => {
    m.set(u, count(m, u) + d);
  };
  for (const t of tablets) {
    if (!t.leader || !alive.has(t.leader)) continue;
    bump(global, t.leader, 1);
    bump(tableOf(t), t.leader, 1);
  }
  const moves: Move[] = [];
  const moved = new Set<string>();
  for (let i = 0; i < movesMax; i++) {
    // Score: [table move?, main gap, other gap]; compared lexicographically, ties on tablet id then target.
    let best: { tablet: TabletView; from: string; to: string; score: [number, number, number] } | undefined;
    for (const t of tablets) {
      if (moved.has(t.id) || !t.leader || !alive.has(t.leader)) continue;
      const from = t.leader;
      const tm = tableOf(t);
      for (const to of t.replicas) {
        if (to === from || !alive.has(to)) continue;
        const tableGap = count(tm, from) - count(tm, to);
        const globalGap = count(global, from) - count(global, to);
        let score: [number, number, number];
        if (tableGap >= 2) score = [1, tableGap, globalGap];
        else if (globalGap >= 2 && tableGap >= 1) score = [0, globalGap, tableGap];
        else continue;
        if (!best || better(score, t.id, to, best.score, best.tablet.id, best.to)) best = { tablet: t, from, to, score };
      }
    }
    if (!best) break;
    moves.push({ type: 'stepdown', tabletId: best.tablet.id, from: best.from, to: best.to });
    moved.add(best.tablet.id);
    bump(global, best.from, -1);
    bump(global, best.to, 1);
    const tm = tableOf(best.tablet);
    bump(tm, best.from, -1);
    bump(tm, best.to, 1);
  }
  return moves;
}

function better(a: readonly number[], aId: string, aTo: string, b: readonly number[], bId: string, bTo: string): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return aId < bId || (aId === bId && aTo < bTo);
}
