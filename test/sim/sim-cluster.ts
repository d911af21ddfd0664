/**
 * The deterministic cluster simulator: 3 or 5 voters (plus spare nodes for membership changes) in one
 * process, driven by one seed. Each step is one event — deliver a message, process a Ready, tick
 * every live node, propose, or inject a fault (partition, crash, restart, conf change, compaction,
 * leadership transfer, ReadIndex). Invariants are checked after every step (SimChecker); then a
 * liveness phase heals everything and requires a leader and a decided fate for every proposal
 * within a bounded number of ticks.
 */
import { NodeId, SeededRng } from '../../common';
import type { ConfChange, Message } from '../../raft';
import { SimChecker, SimViolation } from './sim-checker';
import { encodeU32 } from './sim-hash';
import { SimNetwork } from './sim-network';
import { SimNode } from './sim-node';

export interface SimOptions {
  seed: number;
  /** Steps of the fault phase. */
  steps: number;
  /** Voters at start (3 or 5); default: 3 for even seeds, 5 for odd ones. */
  voters?: number;
  electionTicks?: number;
  /** Print a line per fault event. */
  trace?: boolean;
}

export interface SimResult {
  seed: number;
  steps: number;
  ticks: number;
  voters: number;
  proposals: { accepted: number; committed: number; failed: number };
  elections: number;
  crashes: number;
  confChanges: number;
  snapshotsSent: number;
  /** Committed entries handed to an apply stage while that node's fsync was in flight (RawNode.takeEarly). */
  earlyEntries: number;
  messages: { sent: number; dropped: number };
}

export class SimFailure extends Error {
  override readonly name = 'SimFailure';
  constructor(
    readonly seed: number,
    readonly step: number,
    message: string,
  ) {
    super(`seed ${seed} step ${step}: ${message}\n  replay: SEED=${seed} npm run sim`);
  }
}

interface PendingProposal {
  index: number;
  term: number;
}

export class SimCluster {
  private readonly rng: SeededRng;
  private readonly nodes: SimNode[];
  private readonly byId = new Map<string, SimNode>();
  private readonly net: SimNetwork;
  private readonly checker = new SimChecker();
  private readonly electionTicks: number;
  private now = 0;
  private stepNo = 0;
  private nextProposal = 1;
  private nextRead = 1;
  private readonly pending = new Map<number, PendingProposal>();
  private readonly stats = { accepted: 0, committed: 0, failed: 0, elections: 0, crashes: 0, confChanges: 0, snapshotsSent: 0, earlyEntries: 0 };
  private readonly votersAtStart: number;

  constructor(private readonly opts: SimOptions) {
    this.rng = new SeededRng(opts.seed);
    this.net = new SimNetwork(this.rng.fork());
    this.electionTicks = opts.electionTicks ?? 10;
    this.votersAtStart = opts.voters ?? (opts.seed % 2 === 0 ? 3 : 5);
    const universe = this.votersAtStart + (this.votersAtStart === 3 ? 1 : 2);
    const ids = Array.from({ length: universe }, (_, i) => NodeId(`n${i + 1}`));
    const voters = ids.slice(0, this.votersAtStart);
    const nodeOpts = {
      electionTicks: this.electionTicks,
      heartbeatTicks: 1,
      // Small limits so flow control and message splitting happen often.
      maxSizePerMsgBytes: 64 + this.rng.int(256),
      maxInflightMsgs: 1 + this.rng.int(8),
    };
    this.nodes = ids.map((id) => {
      const conf = voters.includes(id) ? { voters, learners: [] } : { voters: [], learners: [] };
      const n = new SimNode(id, conf, nodeOpts, this.checker);
      n.onApplyProposal = (pid, index) => this.proposalApplied(pid, index);
      n.start(this.rng.fork());
      this.byId.set(id, n);
      return n;
    });
    this.net.faults = this.randomFaults();
  }

  private trace(s: string): void {
    if (this.opts.trace) console.log(`[${this.stepNo} t${this.now}] ${s}`);
  }

  run(): SimResult {
    try {
      for (let i = 0; i < this.opts.steps; i++) {
        this.stepNo++;
        this.faultStep();
        this.checkStep();
      }
      this.liveness();
    } catch (e) {
      if (e instanceof SimFailure) throw e;
      const msg = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      const f = new SimFailure(this.opts.seed, this.stepNo, msg);
      if (e instanceof Error && !(e instanceof SimViolation)) f.stack = `${f.message}\n${e.stack ?? ''}`;
      throw f;
    }
    return {
      seed: this.opts.seed,
      steps: this.stepNo,
      ticks: this.now,
      voters: this.votersAtStart,
      proposals: { accepted: this.stats.accepted, committed: this.stats.committed, failed: this.stats.failed },
      elections: this.stats.elections,
      crashes: this.stats.crashes,
      confChanges: this.stats.confChanges,
      snapshotsSent: this.stats.snapshotsSent,
      earlyEntries: this.stats.earlyEntries,
      messages: { sent: this.net.sent, dropped: this.net.dropped },
    };
  }

  // ------------------------------------------------------------------ events

  private faultStep(): void {
    const r = this.rng.int(1000);
    if (r < 520) this.deliver();
    else if (r < 770) this.processReady(true);
    else if (r < 830) this.tick();
    else if (r < 920) this.propose();
    else if (r < 935) this.readIndex();
    else if (r < 945) this.partition();
    else if (r < 957) {
      this.net.heal();
      this.trace('heal');
    } else if (r < 959) this.crash();
    else if (r < 965) this.restart();
    else if (r < 975) this.confChange();
    else if (r < 987) this.compact();
    else if (r < 993) this.transfer();
    else this.net.faults = this.randomFaults();
  }

  private randomFaults(): SimNetwork['faults'] {
    const drops = [0, 0, 0.01, 0.05, 0.15, 0.3];
    const dups = [0, 0, 0.02, 0.1];
    const delays = [0, 1, 3, 8];
    return { dropRate: drops[this.rng.int(drops.length)]!, dupRate: dups[this.rng.int(dups.length)]!, delayTicksMax: delays[this.rng.int(delays.length)]! };
  }

  private live(): SimNode[] {
    return this.nodes.filter((n) => n.alive);
  }

  private pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[this.rng.int(xs.length)];
  }

  private leader(): SimNode | undefined {
    // The leader with the highest term, if several believe they lead (a stale one may not know yet).
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const n of this.nodes) {
      if (!n.raw) continue;
      const s = n.raw.basicStatus();
      if (s.role === 'LEADER' && s.term > bestTerm) {
        best = n;
        bestTerm = s.term;
      }
    }
    return best;
  }

  /** Deliver one message, or a few when the queue is long (so the network keeps up with ticks). */
  private deliver(inOrder = false): void {
    const k = 1 + (this.net.size() >> 4);
    for (let i = 0; i < k; i++) {
      const m = inOrder ? this.net.takeOldest(this.now) : this.net.takeRandom(this.now);
      if (!m) return;
      const n = this.byId.get(m.to);
      n?.raw?.step(m);
    }
  }

  private processReady(mayCrash: boolean): void {
    const n = this.pick(this.live());
    if (!n?.raw) return;
    if (n.applyPending && this.rng.chance(0.4)) {
      // The apply stage runs on its own schedule: a few queued entries at a time.
      n.applySome(1 + this.rng.int(4));
      return;
    }
    if (n.syncing) {
      // The fsync is in flight (messages delivered meanwhile stepped the core, as on a real host):
      // power may fail before it completes — what went out early is out — or it completes.
      if (mayCrash && this.rng.chance(0.001)) {
        this.trace(`${n.id} loses power before fsync`);
        n.crash();
        this.stats.crashes++;
      } else if (this.rng.chance(0.5)) {
        this.send(n, n.finishSync());
      } else if (this.rng.chance(0.5)) {
        const e = n.takeEarly();
        this.stats.earlyEntries += e.entries;
        this.send(n, e.messages);
      }
      return;
    }
    if (!n.raw.hasReady()) return;
    this.send(n, n.beginReady());
  }

  private send(from: SimNode, msgs: Message[]): void {
    for (const m of msgs) {
      if (m.type === 'snapshot') this.stats.snapshotsSent++;
      const before = this.net.dropped;
      this.net.send(m, this.now);
      // A host learns that a snapshot send failed (connection refused) and reports it.
      if (m.type === 'snapshot' && this.net.dropped > before) from.raw?.reportSnapshot(m.to, false);
    }
  }

  private tick(): void {
    this.now++;
    for (const n of this.nodes) n.raw?.tick();
    if (this.now % 4 === 0) this.resolveProposals();
  }

  private propose(): void {
    const l = this.leader();
    const n = l && this.rng.chance(0.85) ? l : this.pick(this.live());
    if (!n?.raw) return;
    const id = this.nextProposal++;
    const r = n.raw.propose(encodeU32(id));
    if (r.ok) {
      this.stats.accepted++;
      this.pending.set(id, { index: r.index, term: r.term });
    }
  }

  private readIndex(): void {
    const l = this.leader();
    if (!l?.raw) return;
    const ctx = encodeU32(this.nextRead++);
    // Everything committed anywhere before the read starts must be visible to it.
    let bound = 0;
    for (const n of this.nodes) bound = Math.max(bound, n.raw ? n.raw.basicStatus().commit : this.checker.durableCommit(n.id));
    if (l.raw.readIndex(ctx).ok) l.readBounds.set(Buffer.from(ctx).toString('hex'), bound);
  }

  private partition(): void {
    this.net.heal();
    const ids = this.nodes.map((n) => n.id);
    const kind = this.rng.int(5);
    if (kind === 0) {
      // Halves: a random split, both directions cut.
      const side = ids.map(() => this.rng.chance(0.5));
      for (let i = 0; i < ids.length; i++) for (let j = 0; j < ids.length; j++) if (side[i] !== side[j]) this.net.block(ids[i]!, ids[j]!);
      this.trace(`partition halves ${ids.filter((_, i) => side[i]).join(',')} | ${ids.filter((_, i) => !side[i]).join(',')}`);
    } else if (kind === 1) {
      const l = this.leader();
      const x = l && this.rng.chance(0.5) ? l.id : this.pick(ids)!;
      for (const y of ids) if (y !== x) {
        this.net.block(x, y);
        this.net.block(y, x);
      }
      this.trace(`isolate ${x}`);
    } else if (kind === 2) {
      // Ring: each node talks only to its two neighbours.
      const k = ids.length;
      for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) {
        const d = Math.min((i - j + k) % k, (j - i + k) % k);
        if (d > 1) this.net.block(ids[i]!, ids[j]!);
      }
      this.trace('ring');
    } else if (kind === 3) {
      const a = this.pick(ids)!;
      const b = this.pick(ids.filter((y) => y !== a))!;
      this.net.block(a, b);
      this.trace(`one-way ${a} -/-> ${b}`);
    } else {
      // Bridge (partial partition): only the leader and one follower lose each other; both still
      // reach everyone else. Check-quorum's "in lease" rule is what keeps this from flapping.
      const a = this.leader()?.id ?? this.pick(ids)!;
      const b = this.pick(ids.filter((y) => y !== a))!;
      this.net.block(a, b);
      this.net.block(b, a);
      this.trace(`bridge: ${a} <-/-> ${b}`);
    }
  }

  private crash(): void {
    const live = this.live();
    // Keep at least one node up so the run keeps moving.
    if (live.length <= 1) return;
    // Leaders are the interesting victims (Figure 8 needs leaders dying with unreplicated entries).
    const l = this.leader();
    const n = l && this.rng.chance(0.5) ? l : this.pick(live)!;
    n.crash();
    this.stats.crashes++;
    this.trace(`crash ${n.id}`);
  }

  private restart(): void {
    const n = this.pick(this.nodes.filter((x) => !x.alive));
    if (!n) return;
    n.start(this.rng.fork());
    this.trace(`restart ${n.id}`);
  }

  private confChange(): void {
    const l = this.leader();
    if (!l?.raw) return;
    const conf = l.raw.status().conf;
    const members = new Set<string>([...conf.voters, ...conf.learners]);
    const spare = this.nodes.filter((n) => !members.has(n.id)).map((n) => n.id);
    const options: ConfChange[] = [];
    for (const s of spare) options.push({ type: 'addLearner', node: s }, { type: 'addVoter', node: s });
    for (const x of conf.learners) options.push({ type: 'promoteLearner', node: x }, { type: 'removeNode', node: x });
    // Keep at least three voters so faults of one node leave a live quorum.
    if (conf.voters.length > 3) for (const v of conf.voters) options.push({ type: 'removeNode', node: v });
    const cc = this.pick(options);
    if (!cc) return;
    const r = l.raw.proposeConfChange(cc);
    if (r.ok) {
      this.stats.confChanges++;
      this.trace(`conf change ${cc.type} ${cc.node} at ${r.index}`);
    }
  }

  private compact(): void {
    const n = this.pick(this.live());
    if (n?.compact()) this.trace(`compact ${n.id} to ${n.appliedIndex}`);
  }

  private transfer(): void {
    const l = this.leader();
    if (!l?.raw) return;
    const to = this.pick(l.raw.status().conf.voters.filter((v) => v !== l.id));
    if (!to) return;
    l.raw.transferLeader(to);
    this.trace(`transfer ${l.id} -> ${to}`);
  }

  // ------------------------------------------------------------------ proposals

  private proposalApplied(id: number, index: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    if (p.index !== index) throw new SimViolation(`proposal ${id} accepted at ${p.index} applied at ${index}`);
    this.pending.delete(id);
    this.stats.committed++;
  }

  /**
   * A proposal accepted at (i, t) has definitively failed once a different entry is committed at i,
   * or an entry of a later term is committed below i (terms only grow along a log, so (i, t) can
   * never follow it).
   */
  private resolveProposals(): void {
    const last = this.checker.lastCommitted();
    const terms = this.checker.committedTerms;
    for (const [id, p] of this.pending) {
      if (p.index < terms.length) {
        if (terms[p.index] !== p.term) {
          this.pending.delete(id);
          this.stats.failed++;
        }
      } else if (last.term > p.term) {
        this.pending.delete(id);
        this.stats.failed++;
      }
    }
  }

  // ------------------------------------------------------------------ invariants

  private checkStep(): void {
    let leases = 0;
    let maxCommit = 0;
    for (const n of this.nodes) {
      const raw = n.raw;
      if (!raw) continue;
      const s = raw.basicStatus();
      if (s.applied > s.commit) throw new SimViolation(`${n.id}: applied ${s.applied} > commit ${s.commit}`);
      maxCommit = Math.max(maxCommit, s.commit);
      if (s.role === 'LEADER' && this.checker.observeLeader(n.id, s.term)) {
        this.stats.elections++;
        this.trace(`${n.id} leads term ${s.term}`);
        try {
          this.checker.checkLeaderCompleteness(n.id, s.term, raw.firstIndex(), (i) => raw.logTerm(i));
        } catch (e) {
          if (e instanceof SimViolation) throw new SimViolation(`${e.message}\n${this.dump()}`);
          throw e;
        }
      }
    }
    for (const n of this.nodes) {
      if (!n.raw?.hasLeaderLease()) continue;
      leases++;
      // A lease holder is the only leader: no replica can know of a commit it does not.
      const c = n.raw.basicStatus().commit;
      if (c < maxCommit) throw new SimViolation(`lease: ${n.id} holds a lease with commit ${c} while a replica knows commit ${maxCommit}`);
    }
    if (leases > 1) throw new SimViolation(`lease: ${leases} replicas hold a leader lease at once`);
  }

  /** Every node's state, for failure reports. */
  private dump(): string {
    const lines: string[] = [];
    for (const n of this.nodes) {
      if (!n.raw) {
        lines.push(`  ${n.id}: down`);
        continue;
      }
      const st = n.raw.status();
      const terms: string[] = [];
      for (let i = n.raw.firstIndex(); i <= st.lastIndex && terms.length < 200; i++) terms.push(String(n.raw.logTerm(i)));
      lines.push(`  ${n.id}: ${JSON.stringify({ ...st, vote: n.raw.basicStatus().vote, first: n.raw.firstIndex() })}\n      log terms from ${n.raw.firstIndex()}: ${terms.join(' ')}`);
    }
    lines.push(`  network: ${this.net.size()} queued; blocked: ${this.net.describe() || 'none'}`);
    return lines.join('\n');
  }

  // ------------------------------------------------------------------ liveness

  private liveness(): void {
    this.net.heal();
    this.net.faults = { dropRate: 0, dupRate: 0, delayTicksMax: 1 };
    for (const n of this.nodes) if (!n.alive) n.start(this.rng.fork());
    this.trace('liveness phase: healed, all nodes up');
    const healedAt = this.now;
    const leaderDeadline = healedAt + 10 * this.electionTicks * 2;
    const doneDeadline = healedAt + 40 * this.electionTicks;
    let probed = false;
    // Bounded: every iteration is one step and the tick deadline is enforced below.
    for (let guard = 0; guard < 2_000_000; guard++) {
      this.stepNo++;
      // A healthy cluster: messages and Readies are handled well within a tick, so time advances
      // when the cluster is quiet (or now and then, so a busy one cannot stall the clock).
      const quiet = this.net.size() === 0 && !this.nodes.some((n) => n.syncing || n.applyPending || n.raw?.hasReady());
      const r = this.rng.int(100);
      if (quiet || r < 2) this.tick();
      else if (r < 55) this.deliver(true);
      else this.processReady(false);
      this.checkStep();
      const l = this.leader();
      const ready = l?.raw && l.raw.basicStatus().commit >= 1 && l.raw.logTerm(l.raw.basicStatus().commit) === l.raw.basicStatus().term;
      if (ready && !probed) {
        // One last proposal: it must commit in a healthy cluster.
        const id = this.nextProposal++;
        const res = l.raw!.propose(encodeU32(id));
        if (res.ok) {
          this.pending.set(id, { index: res.index, term: res.term });
          this.stats.accepted++;
          probed = true;
        }
      }
      if (ready && probed) {
        this.resolveProposals();
        if (this.pending.size === 0) return;
      }
      if (!l && this.now > leaderDeadline) throw new SimViolation(`liveness: no leader ${this.now - healedAt} ticks after healing`);
      if (this.now > doneDeadline) {
        const ids = [...this.pending.entries()].slice(0, 5).map(([id, p]) => `${id}@${p.index}/${p.term}`);
        throw new SimViolation(`liveness: ${this.pending.size} proposals undecided ${this.now - healedAt} ticks after healing (${ids.join(' ')}); leader ${l?.id ?? 'none'}\n${this.dump()}`);
      }
    }
    throw new SimViolation('liveness: step guard exhausted');
  }
}

export function runSeed(opts: SimOptions): SimResult {
  return new SimCluster(opts).run();
}
