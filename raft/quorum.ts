/**
 * Majority arithmetic (etcd's quorum/majority.go) over a plain voter list: the committed index is the
 * highest index a majority holds; an election is won once a majority granted, lost once a majority
 * refused.
 */
import type { NodeId } from '../common/ids';

export type VoteResult = 'won' | 'lost' | 'pending';

export function majority(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/**
 * The largest index that a majority of `voters` have matched. For 5 voters with matches
 * [9, 7, 7, 3, 1] it is 7. An empty config commits nothing (returns 0).
 */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const n = voters.length;
  if (n === 0) return 0;
  if (n === 1) return matchOf(voters[0]!);
  const ms = new Array<number>(n);
  for (let i = 0; i < n; i++) ms[i] = matchOf(voters[i]!);
  ms.sort((a, b) => b - a);
  return ms[majority(n) - 1]!;
}

export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (voters.length === 0) return 'won';
  let granted = 0;
  let rejected = 0;
  for (const v of voters) {
    const g = votes.get(v);
    if (g === true) granted++;
    else if (g === false) rejected++;
  }
  const q = majority(voters.length);
  if (granted >= q) return 'won';
  if (rejected >= q) return 'lost';
  return 'pending';
}
