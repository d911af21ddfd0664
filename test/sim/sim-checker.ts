/**
 * Safety invariants of Raft (paper Figure 3, plus durability rules), checked by the simulator after
 * every step. A violation throws SimViolation; the driver prints the seed so the run replays exactly.
 *
 * The log-matching check is global: the hash of a log prefix is determined by the (index, term) of
 * its last entry. Every time any replica appends an entry, its prefix hash is compared with the one
 * first recorded for that (index, term) anywhere — one map lookup instead of comparing logs pairwise.
 */
import type { NodeId } from '../../common';
import type { HardState } from '../../raft';

export class SimViolation extends Error {
  override readonly name = 'SimViolation';
}

function fail(msg: string): never {
  throw new SimViolation(msg);
}

interface DurableRecord {
  term: number;
  commit: number;
  /** Vote cast in `term` (durable). */
  vote: string;
}

export class SimChecker {
  /** term -> its leader (election safety). */
  private readonly leaders = new Map<number, NodeId>();
  /** `${index}/${term}` -> prefix hash (log matching). */
  private readonly chain = new Map<string, number>();
  /** committedTerms[i] = term of the entry applied at index i anywhere (state machine safety). */
  readonly committedTerms: number[] = [0];
  private readonly committedHash: number[] = [0];
  private readonly durable = new Map<NodeId, DurableRecord>();
  /** Per node, the term it leads and the highest index it appended as leader in that term. */
  private readonly leaderAppend = new Map<NodeId, { term: number; last: number }>();

  chainHashOf(index: number, term: number): number | undefined {
    if (index === 0) return 0;
    return this.chain.get(`${index}/${term}`);
  }

  /** A replica stored entry (index, term) whose prefix hashes to `h`. */
  recordChain(node: NodeId, index: number, term: number, h: number): void {
    const k = `${index}/${term}`;
    const prev = this.chain.get(k);
    if (prev === undefined) this.chain.set(k, h);
    else if (prev !== h) fail(`log matching: ${node} holds entry ${k} with a different prefix than another replica`);
  }

  /** A node is seen as leader of `term`. Returns true the first time (caller checks completeness). */
  observeLeader(node: NodeId, term: number): boolean {
    const l = this.leaders.get(term);
    if (l === undefined) {
      this.leaders.set(term, node);
      return true;
    }
    if (l !== node) fail(`election safety: two leaders in term ${term}: ${l} and ${node}`);
    return false;
  }

  /** Leader append-only: while leading `term`, a node's appends only extend its log. */
  leaderAppended(node: NodeId, term: number, first: number, last: number): void {
    const r = this.leaderAppend.get(node);
    if (r && r.term === term) {
      if (first <= r.last) fail(`leader append-only: ${node} (term ${term}) rewrote index ${first} after appending up to ${r.last}`);
      r.last = last;
    } else this.leaderAppend.set(node, { term, last });
  }

  /** Leader completeness: a new leader's log holds every entry committed (applied anywhere) so far. */
  checkLeaderCompleteness(node: NodeId, term: number, firstIndex: number, logTerm: (i: number) => number | undefined): void {
    for (let i = Math.max(1, firstIndex); i < this.committedTerms.length; i++) {
      const t = logTerm(i);
      if (t !== this.committedTerms[i]) fail(`leader completeness: leader ${node} of term ${term} has term ${t} at committed index ${i} (committed term ${this.committedTerms[i]})`);
    }
  }

  /** State machine safety: `node` applied the entry (index, term) whose prefix hash is h. */
  applied(node: NodeId, index: number, term: number, h: number): void {
    if (index < this.committedTerms.length) {
      if (this.committedTerms[index] !== term || this.committedHash[index] !== h) fail(`state machine safety: ${node} applied ${index}/${term}, another replica applied ${index}/${this.committedTerms[index]}`);
      return;
    }
    if (index !== this.committedTerms.length) fail(`apply gap: ${node} applied ${index} but the highest index applied anywhere is ${this.committedTerms.length - 1}`);
    this.committedTerms.push(term);
    this.committedHash.push(h);
  }

  /** A replica installed a snapshot claiming state `h` at `index`. */
  snapshotInstalled(node: NodeId, index: number, h: number): void {
    if (index >= this.committedHash.length) fail(`snapshot beyond anything applied: ${node} installed ${index}`);
    if (this.committedHash[index] !== h) fail(`state machine safety: ${node} installed a snapshot at ${index} whose state differs`);
  }

  lastCommitted(): { index: number; term: number } {
    const i = this.committedTerms.length - 1;
    return { index: i, term: this.committedTerms[i]! };
  }

  /** The node made `hs` durable: term and commit never go back, one vote per term. */
  synced(node: NodeId, hs: HardState): void {
    const d = this.durable.get(node);
    if (!d) {
      this.durable.set(node, { term: hs.term, commit: hs.commit, vote: hs.vote });
      return;
    }
    if (hs.term < d.term) fail(`durable term went back on ${node}: ${d.term} -> ${hs.term}`);
    if (hs.commit < d.commit) fail(`durable commit went back on ${node}: ${d.commit} -> ${hs.commit}`);
    if (hs.term === d.term && d.vote !== '' && hs.vote !== d.vote) fail(`double vote: ${node} voted ${d.vote} then ${hs.vote} in term ${hs.term}`);
    d.term = hs.term;
    d.commit = hs.commit;
    d.vote = hs.vote;
  }

  /** After a restart the replica must come back with at least what it made durable. */
  restarted(node: NodeId, term: number, vote: string, commit: number): void {
    const d = this.durable.get(node);
    if (!d) return;
    if (term < d.term) fail(`term went back across restart on ${node}: ${d.term} -> ${term}`);
    if (commit < d.commit) fail(`commit went back across restart on ${node}: ${d.commit} -> ${commit}`);
    if (term === d.term && d.vote !== '' && vote !== d.vote) fail(`vote forgotten across restart on ${node} in term ${term}`);
  }

  durableCommit(node: NodeId): number {
    return this.durable.get(node)?.commit ?? 0;
  }
}
