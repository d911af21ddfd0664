/** Small directed-graph helpers for the cycle checkers: Tarjan SCCs and shortest cycles. */

export type EdgeKind = 'ww' | 'wr' | 'rw';

export class DepGraph {
  /** from → to → kinds */
  readonly out = new Map<number, Map<number, Set<EdgeKind>>>();

  add(from: number, to: number, kind: EdgeKind): void {
    if (from === to) return;
    let m = this.out.get(from);
    if (!m) this.out.set(from, (m = new Map()));
    let s = m.get(to);
    if (!s) m.set(to, (s = new Set()));
    s.add(kind);
  }

  nodes(): number[] {
    const s = new Set<number>();
    for (const [f, m] of this.out) {
      s.add(f);
      for (const t of m.keys()) s.add(t);
    }
    return [...s];
  }

  /** Successors of `n` over edges having at least one of `kinds`. */
  succ(n: number, kinds: ReadonlySet<EdgeKind>): number[] {
    const m = this.out.get(n);
    if (!m) return [];
    const r: number[] = [];
    for (const [t, ks] of m) for (const k of ks) if (kinds.has(k)) { r.push(t); break; }
    return r;
  }

  kinds(from: number, to: number): Set<EdgeKind> {
    return this.out.get(from)?.get(to) ?? new Set();
  }
}

/** Strongly connected components with more than one node (iterative Tarjan: no recursion limits). */
export function cyclicComponents(g: DepGraph, kinds: ReadonlySet<EdgeKind>): number[][] {
  let index = 0;
  const idx = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const out: number[][] = [];
  for (const root of g.nodes()) {
    if (idx.has(root)) continue;
    const work: Array<{ n: number; succ: number[]; i: number }> = [];
    const push = (n: number): void => {
      idx.set(n, index);
      low.set(n, index);
      index++;
      stack.push(n);
      onStack.add(n);
      work.push({ n, succ: g.succ(n, kinds), i: 0 });
    };
    push(root);
    while (work.length) {
      const top = work[work.length - 1]!;
      if (top.i < top.succ.length) {
        const w = top.succ[top.i++]!;
        if (!idx.has(w)) push(w);
        else if (onStack.has(w)) low.set(top.n, Math.min(low.get(top.n)!, idx.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1]!;
        low.set(parent.n, Math.min(low.get(parent.n)!, low.get(top.n)!));
      }
      if (low.get(top.n) === idx.get(top.n)) {
        const comp: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== top.n);
        if (comp.length > 1) out.push(comp);
      }
    }
  }
  return out;
}

/** Shortest path from `from` to `to` over `kinds` edges (BFS), as a node list, or undefined. */
export function shortestPath(g: DepGraph, from: number, to: number, kinds: ReadonlySet<EdgeKind>, within?: ReadonlySet<number>): number[] | undefined {
  const prev = new Map<number, number>();
  const queue = [from];
  const seen = new Set([from]);
  for (let qi = 0; qi < queue.length; qi++) {
    const n = queue[qi]!;
    for (const s of g.succ(n, kinds)) {
      if (within && !within.has(s)) continue;
      if (s === to) {
        const path = [to, n];
        let c = n;
        while (c !== from) {
          c = prev.get(c)!;
          path.push(c);
        }
        return path.reverse();
      }
      if (seen.has(s)) continue;
      seen.add(s);
      prev.set(s, n);
      queue.push(s);
    }
  }
  return undefined;
}
