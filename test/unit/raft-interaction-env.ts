/**
 * The interaction environment behind raft/testdata/*.txt (in the spirit of etcd's datadriven
 * interaction tests): each command drives RawNodes by hand — campaign, tick, propose, process one
 * Ready, deliver messages — and prints what happened, so a test file reads as a protocol transcript.
 */
import { NodeId, SeededRng } from '../../common';
import type { ConfChange, Entry, Message, Ready } from '../../raft';
import { bootstrapStorage, decodeConfChange, RawNode } from '../../raft';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';

interface EnvNode {
  id: NodeId;
  storage: MemoryLogStorage;
  raw: RawNode | undefined;
  applied: number;
  /** Snapshot payload = the applied normal payloads joined with ','. */
  sm: string[];
  conf: { voters: NodeId[]; learners: NodeId[] };
}

interface NodeOptions {
  electionTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxSizePerMsgBytes: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export class InteractionEnv {
  private readonly nodes = new Map<string, EnvNode>();
  private queue: Message[] = [];
  private readonly isolated = new Set<string>();
  private opts: NodeOptions = { electionTicks: 10, preVote: true, checkQuorum: true, maxSizePerMsgBytes: 1 << 20 };
  private readonly rng = new SeededRng(1);
  private out: string[] = [];

  /** Run one command; returns its output (never empty). */
  run(cmd: string, args: string[]): string {
    this.out = [];
    const kv = new Map<string, string>();
    const pos: string[] = [];
    for (const a of args) {
      const eq = a.indexOf('=');
      if (eq > 0) kv.set(a.slice(0, eq), a.slice(eq + 1));
      else pos.push(a);
    }
    switch (cmd) {
      case 'add-nodes':
        this.addNodes(Number(pos[0]), kv);
        break;
      case 'campaign':
        this.node(pos[0]).campaign();
        break;
      case 'tick':
        for (let i = 0; i < Number(pos[1] ?? '1'); i++) this.node(pos[0]).tick();
        break;
      case 'propose': {
        const r = this.node(pos[0]).propose(enc.encode(pos[1] ?? ''));
        this.print(r.ok ? `proposed at ${r.index}/${r.term}` : `refused: ${r.reason}`);
        break;
      }
      case 'propose-conf-change': {
        const cc = { type: pos[1], node: NodeId(pos[2] ?? '') } as ConfChange;
        const r = this.node(pos[0]).proposeConfChange(cc);
        this.print(r.ok ? `proposed at ${r.index}/${r.term}` : `refused: ${r.reason}`);
        break;
      }
      case 'process-ready':
        for (const id of pos) this.processReady(id, kv.get('crash-before-sync') === 'true');
        break;
      case 'deliver-msgs':
        this.deliver(pos.length > 0 ? new Set(pos) : undefined, kv.get('drop') === 'true');
        break;
      case 'stabilize':
        this.stabilize(pos.length > 0 ? pos : [...this.nodes.keys()]);
        break;
      case 'isolate':
        this.isolated.add(pos[0]!);
        break;
      case 'recover':
        this.isolated.clear();
        break;
      case 'status':
        for (const id of pos) this.printStatus(id);
        break;
      case 'raft-log':
        this.printLog(pos[0]!);
        break;
      case 'compact':
        this.compact(pos[0]!);
        break;
      case 'transfer-leader':
        this.node(pos[0]).transferLeader(NodeId(pos[1] ?? ''));
        break;
      case 'read-index': {
        const r = this.node(pos[0]).readIndex(enc.encode(pos[1] ?? ''));
        this.print(r.ok ? 'accepted' : `refused: ${r.reason}`);
        break;
      }
      case 'lease':
        for (const id of pos) this.print(`${id}: lease ${this.node(id).hasLeaderLease() ? 'valid' : 'not held'}`);
        break;
      case 'crash': {
        const n = this.envNode(pos[0]);
        n.storage.crash();
        n.raw = undefined;
        this.print(`${n.id} crashed (unsynced writes lost)`);
        break;
      }
      case 'restart':
        this.start(this.envNode(pos[0]));
        this.printStatus(pos[0]!);
        break;
      default:
        throw new Error(`unknown command ${cmd}`);
    }
    return this.out.length > 0 ? this.out.join('\n') : 'ok';
  }

  private print(s: string): void {
    this.out.push(s);
  }

  private addNodes(n: number, kv: Map<string, string>): void {
    this.opts = {
      electionTicks: Number(kv.get('election') ?? '10'),
      preVote: kv.get('prevote') !== 'false',
      checkQuorum: kv.get('checkquorum') !== 'false',
      maxSizePerMsgBytes: Number(kv.get('max-msg-bytes') ?? String(1 << 20)),
    };
    const voters = (kv.get('voters') ?? Array.from({ length: n }, (_, i) => String(i + 1)).join(',')).split(',').map(NodeId);
    for (let i = 1; i <= n; i++) {
      const id = NodeId(String(i));
      const storage = new MemoryLogStorage({ trackDurability: true });
      // Initial voters are bootstrapped (config in the log); other nodes start empty and are added later.
      if (voters.includes(id)) bootstrapStorage(storage, voters);
      void storage.sync();
      const node: EnvNode = { id, storage, raw: undefined, applied: 0, sm: [], conf: { voters: [], learners: [] } };
      this.nodes.set(id, node);
      this.start(node);
    }
    this.print(`${n} nodes; voters ${voters.join(',')}`);
  }

  private start(n: EnvNode): void {
    const snap = n.storage.snapshot();
    n.applied = snap ? snap.meta.index : 0;
    n.sm = snap && snap.data.length > 0 ? dec.decode(snap.data).split(',') : [];
    n.conf = snap ? snap.meta.conf : n.storage.initialState().conf;
    n.storage.setConfState(n.conf);
    n.raw = new RawNode({ id: n.id, storage: n.storage, applied: n.applied, rng: this.rng.fork(), ...this.opts });
  }

  private envNode(id: string | undefined): EnvNode {
    const n = this.nodes.get(id ?? '');
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  private node(id: string | undefined): RawNode {
    const n = this.envNode(id);
    if (!n.raw) throw new Error(`node ${id} is down`);
    return n.raw;
  }

  private processReady(id: string, crashBeforeSync: boolean): boolean {
    const n = this.envNode(id);
    const raw = n.raw;
    if (!raw || !raw.hasReady()) return false;
    const rd = raw.ready();
    this.print(`> ${id} handling Ready`);
    for (const l of formatReady(rd)) this.print(`  ${l}`);
    if (rd.snapshot) n.storage.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) n.storage.append(rd.entries);
    if (rd.hardState) n.storage.setHardState(rd.hardState);
    if (crashBeforeSync) {
      n.storage.crash();
      n.raw = undefined;
      this.print(`  ${id} crashed before fsync: the Ready's writes are lost, nothing was sent`);
      return true;
    }
    if (rd.mustSync) void n.storage.sync();
    for (const m of rd.messages) this.queue.push(m);
    if (rd.snapshot) {
      n.applied = rd.snapshot.meta.index;
      n.sm = rd.snapshot.data.length > 0 ? dec.decode(rd.snapshot.data).split(',') : [];
      n.conf = rd.snapshot.meta.conf;
    }
    for (const e of rd.committedEntries) {
      n.applied = e.index;
      if (e.type === 'normal') n.sm.push(dec.decode(e.data));
      if (e.type === 'confChange') {
        const cc = decodeConfChange(e.data);
        if (!cc) throw new Error('bad conf change');
        n.conf = raw.applyConfChange(cc);
        n.storage.setConfState(n.conf);
        this.print(`  ${id} applied ${cc.type} ${cc.node}: voters=${n.conf.voters.join(',')} learners=${n.conf.learners.join(',') || '-'}`);
      }
    }
    raw.advance(rd);
    return true;
  }

  private deliver(to: Set<string> | undefined, drop: boolean): number {
    const keep: Message[] = [];
    const now: Message[] = [];
    for (const m of this.queue) (to === undefined || to.has(m.to) ? now : keep).push(m);
    this.queue = keep;
    for (const m of now) {
      const cut = this.isolated.has(m.from) || this.isolated.has(m.to);
      const n = this.nodes.get(m.to);
      if (drop || cut || !n?.raw) {
        this.print(`dropped: ${formatMessage(m)}`);
        continue;
      }
      this.print(formatMessage(m));
      n.raw.step(m);
    }
    return now.length;
  }

  private stabilize(ids: string[]): void {
    const set = new Set(ids);
    // Bounded: a quiet group stabilizes in a handful of rounds.
    for (let round = 0; round < 50; round++) {
      let any = false;
      for (const id of ids) if (this.processReady(id, false)) any = true;
      if (this.deliver(set, false) > 0) any = true;
      if (!any) return;
    }
    throw new Error('stabilize: no fixpoint after 50 rounds');
  }

  private printStatus(id: string): void {
    const n = this.envNode(id);
    if (!n.raw) {
      this.print(`${id}: down`);
      return;
    }
    const s = n.raw.status();
    this.print(`${id}: ${s.role} term=${s.term} leader=${s.leader || '-'} commit=${s.commit} applied=${s.applied} last=${s.lastIndex} voters=${s.conf.voters.join(',')} learners=${s.conf.learners.join(',') || '-'} sm=[${n.sm.join(',')}]`);
  }

  private printLog(id: string): void {
    const n = this.envNode(id);
    const raw = n.raw;
    if (!raw) throw new Error(`node ${id} is down`);
    const last = raw.basicStatus().lastIndex;
    const first = raw.firstIndex();
    if (last < first) {
      this.print(`log empty (first=${first})`);
      return;
    }
    const ents = n.storage.lastIndex() >= first ? n.storage.entries(first, Math.min(last, n.storage.lastIndex()) + 1) : [];
    this.print(`first=${first} last=${last}`);
    for (const e of ents) this.print(formatEntry(e));
  }

  private compact(id: string): void {
    const n = this.envNode(id);
    const raw = n.raw;
    if (!raw) throw new Error(`node ${id} is down`);
    const idx = n.applied;
    n.storage.compact(idx, { meta: { index: idx, term: n.storage.term(idx), conf: n.conf }, data: enc.encode(n.sm.join(',')) });
    void n.storage.sync();
    this.print(`${id} compacted through ${idx}; first index now ${raw.firstIndex()}`);
  }
}

function formatEntry(e: Entry): string {
  if (e.type === 'normal') return `${e.index}/${e.term} normal "${dec.decode(e.data)}"`;
  if (e.type === 'noop') return `${e.index}/${e.term} noop`;
  const cc = decodeConfChange(e.data);
  return `${e.index}/${e.term} conf ${cc ? `${cc.type} ${cc.node}` : '?'}`;
}

export function formatMessage(m: Message): string {
  const h = `${m.from}->${m.to} ${m.type} t${m.term}`;
  switch (m.type) {
    case 'append':
      return `${h} prev=${m.prevIndex}/${m.prevTerm} commit=${m.commit}${m.entries.length ? ` entries=[${m.entries.map(formatEntry).join(', ')}]` : ''}${m.noAck ? ' noack' : ''}`;
    case 'appendResp':
      return m.reject ? `${h} REJECT index=${m.index} hint=${m.rejectHint}/${m.rejectTermHint ?? 0}` : `${h} index=${m.index}`;
    case 'heartbeat':
      return `${h} commit=${m.commit}${m.context?.length ? ` ctx=${dec.decode(m.context)}` : ''}`;
    case 'heartbeatResp':
      return `${h}${m.context?.length ? ` ctx=${dec.decode(m.context)}` : ''}`;
    case 'vote':
      return `${h} ${m.pre ? 'PRE ' : ''}${m.transfer ? 'TRANSFER ' : ''}last=${m.lastIndex}/${m.lastTerm}`;
    case 'voteResp':
      return `${h} ${m.pre ? 'PRE ' : ''}${m.reject ? 'REJECT' : 'GRANT'}`;
    case 'snapshot':
      return `${h} snapshot=${m.snapshot.meta.index}/${m.snapshot.meta.term} voters=${m.snapshot.meta.conf.voters.join(',')}`;
    case 'timeoutNow':
      return h;
  }
}

function formatReady(rd: Ready): string[] {
  const out: string[] = [];
  if (rd.softState) out.push(`role=${rd.softState.role} leader=${rd.softState.leader || '-'}`);
  if (rd.hardState) out.push(`HardState term=${rd.hardState.term} vote=${rd.hardState.vote || '-'} commit=${rd.hardState.commit}`);
  if (rd.snapshot) out.push(`Snapshot ${rd.snapshot.meta.index}/${rd.snapshot.meta.term}`);
  if (rd.entries.length) out.push(`Entries: ${rd.entries.map(formatEntry).join(', ')}`);
  if (rd.committedEntries.length) out.push(`Committed: ${rd.committedEntries.map(formatEntry).join(', ')}`);
  for (const rs of rd.readStates) out.push(`ReadState index=${rs.index} ctx=${dec.decode(rs.context)}`);
  if (rd.messages.length) out.push(`Messages: ${rd.messages.length}`);
  if (rd.mustSync) out.push('mustSync');
  return out;
}
