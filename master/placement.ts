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
 * Dead replicas to replace: one per tablet per round, only where a live leader can carry out the
 * change and a live tserver not already hosting the tablet exists (least loaded first).
 */
export function planReplacements(tservers: readonly TServerLoad[], tablets: readonly TabletView[], movesMax: number): Move[] {
  const state = new Map(tservers.map((t) => [t.uuid, { uuid: t.uuid, alive: t.alive, tablets: t.tablets }]));
  const moves: Move[] = [];
  for (const t of [...tablets].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (moves.length >= movesMax) break;
    const dead = t.replicas.filter((u) => state.get(u)?.alive !== true).sort();
    if (dead.length === 0) continue;
    if (!t.leader || state.get(t.leader)?.alive !== true || !t.replicas.includes(t.leader)) continue;
    const candidates = [...state.values()].filter((s) => s.alive && !t.replicas.includes(s.uuid)).sort(byLoad);
    const target = candidates[0];
    if (!target) continue;
    target.tablets++;
    moves.push({ type: 'replace', tabletId: t.id, dead: dead[0]!, target: target.uuid });
  }
  return moves;
}

/**
 * Leader balancing: move leadership from the live tserver with the most leaders to a replica holder
 * with fewer (by at least 2, so moves converge and never ping-pong), at most movesMax per round.
 */
export function planLeaderMoves(tservers: readonly TServerLoad[], tablets: readonly TabletView[], movesMax: number): Move[] {
  const alive = new Set(tservers.filter((t) => t.alive).map((t) => t.uuid));
  const leaders = new Map<string, number>();
  for (const u of alive) leaders.set(u, 0);
  for (const t of tablets) if (t.leader && alive.has(t.leader)) leaders.set(t.leader, (leaders.get(t.leader) ?? 0) + 1);
  const moves: Move[] = [];
  const moved = new Set<string>();
  for (let i = 0; i < movesMax; i++) {
    let best: { tablet: TabletView; from: string; to: string; gap: number } | undefined;
    for (const t of tablets) {
      if (moved.has(t.id) || !t.leader || !alive.has(t.leader)) continue;
      const from = t.leader;
      const fromCount = leaders.get(from) ?? 0;
      for (const to of t.replicas) {
        if (to === from || !alive.has(to)) continue;
        const gap = fromCount - (leaders.get(to) ?? 0);
        if (gap < 2) continue;
        if (!best || gap > best.gap || (gap === best.gap && (t.id < best.tablet.id || (t.id === best.tablet.id && to < best.to)))) {
          best = { tablet: t, from, to, gap };
        }
      }
    }
    if (!best) break;
    moves.push({ type: 'stepdown', tabletId: best.tablet.id, from: best.from, to: best.to });
    moved.add(best.tablet.id);
    leaders.set(best.from, (leaders.get(best.from) ?? 0) - 1);
    leaders.set(best.to, (leaders.get(best.to) ?? 0) + 1);
  }
  return moves;
}
