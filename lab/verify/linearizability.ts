/**
 * Linearizability of a single register per key, checked with the Wing–Gong / Lowe search
 * (WGL with memoisation on (linearized set, register state)), one key at a time (P-compositionality).
 *
 * Operations (f): `read` (completion value = the value read, null when absent), `write` (invoke value
 * = the value), `cas` (invoke value = [expected, new]; ok completion value true when it swapped,
 * false when the current value differed — or, Jepsen's convention and what the register workload
 * records, a `fail` completion for a cas that did not swap). `fail` completions certainly did not
 * happen and are dropped; `info` completions may or may not have happened: they may be linearized
 * anywhere after their invocation, or not at all (an info read is dropped: it has no effect to explain).
 */
import { pairCalls, type Call, type HistoryOp } from './history';

export type RegValue = string | number | null;

interface Entry {
  id: number;
  call: Call;
  required: boolean;
}

interface Node {
  kind: 'call' | 'ret';
  entry: Entry;
  time: number;
  prev: Node | null;
  next: Node | null;
  /** For a call node: its return node (null for info ops, which never return). */
  match: Node | null;
}

export interface KeyResult {
  key: string;
  valid: boolean | 'unknown';
  ops: number;
  /**
   * On failure, for the report: the longest linearizable prefix the search found (its last few ops and
   * the register state after it), the operation that could not follow it, and the ops concurrent with
   * that one (in history order) — the history excerpt that shows the anomaly.
   */
  witness?: WitnessOp[];
  /** On failure: register state after the longest linearizable prefix, and that prefix's length. */
  stuck?: { prefixOps: number; state: RegValue; blockedIndex: number };
}

export interface WitnessOp {
  /** History index of the invocation. */
  index: number;
  process: number;
  f: string;
  invoke: unknown;
  result: unknown;
  type: string;
  /** 'prefix': linearized before the stuck point; 'blocked': could not be linearized; 'concurrent': overlaps it. */
  role: 'prefix' | 'blocked' | 'concurrent';
}

export interface LinearizabilityResult {
  valid: boolean | 'unknown';
  keys: number;
  failures: KeyResult[];
  unknown: KeyResult[];
}

function apply(state: RegValue, c: Call): { ok: boolean; next: RegValue } {
  switch (c.f) {
    case 'write':
      return { ok: true, next: c.invokeValue as RegValue };
    case 'read':
      return { ok: c.value === state || (c.value === undefined && state === null), next: state };
    case 'cas': {
      const [expected, nv] = c.invokeValue as [RegValue, RegValue];
      if (c.type === 'info') return state === expected ? { ok: true, next: nv } : { ok: false, next: state };
      const swapped = c.value === true;
      if (swapped) return state === expected ? { ok: true, next: nv } : { ok: false, next: state };
      return { ok: state !== expected, next: state };
    }
    default:
      throw new Error(`register model: unknown operation ${c.f}`);
  }
}

/** What a cas writes, else the invoke value (the value a write or info op may have installed). */
function written(c: Call): unknown {
  return c.f === 'cas' ? (c.invokeValue as [RegValue, RegValue])[1] : c.invokeValue;
}

/** The key's calls prepared for the search: entries kept, values observed, and whether any cas answered "not swapped". */
interface Prepared {
  entries: Entry[];
  observed: Set<unknown>;
  casNotSwapped: boolean;
}

/** Drop the calls that need no explaining (fail, info reads, unobserved info writes) and number the rest. */
function prepareEntries(calls: readonly Call[]): Prepared {
  const entries: Entry[] = [];
  // An indeterminate write (or cas) of a value nobody observed can always be taken as "never
  // happened": in any linearization that includes it, nothing between it and the next state change
  // depends on its value (no read returned it, no cas expected it), so dropping it leaves every other
  // operation explained. The one exception is a cas that answered "not swapped" (ok, false): it needs
  // state != expected, which the dropped value may have provided; with such a cas on the key nothing
  // is dropped. This keeps the search small when a fault leaves many writes unknown.
  const observed = new Set<unknown>();
  let casNotSwapped = false;
  for (const c of calls) {
    if (c.type === 'fail') continue;
    if (c.f === 'read' && c.type === 'ok') observed.add(c.value ?? null);
    if (c.f === 'cas') {
      observed.add((c.invokeValue as [RegValue, RegValue])[0]);
      if (c.type === 'ok' && c.value !== true) casNotSwapped = true;
    }
  }
  for (const c of calls) {
    if (c.type === 'fail') continue;
    if (c.type === 'info' && c.f === 'read') continue;
    if (!casNotSwapped && c.type === 'info' && (c.f === 'write' || c.f === 'cas') && !observed.has(written(c))) continue;
    entries.push({ id: entries.length, call: c, required: c.type === 'ok' });
  }
  return { entries, observed, casNotSwapped };
}

/** Build the doubly linked event list (calls and returns by time) behind a sentinel head, and return the head. */
function buildEventList(entries: readonly Entry[], firstCall: Call): Node {
  // Event list ordered by time; at equal times calls come first so touching operations count as concurrent.
  const events: Node[] = [];
  for (const e of entries) {
    const call: Node = { kind: 'call', entry: e, time: e.call.invokeTime, prev: null, next: null, match: null };
    events.push(call);
    if (e.required) {
      const ret: Node = { kind: 'ret', entry: e, time: e.call.completeTime, prev: null, next: null, match: null };
      call.match = ret;
      events.push(ret);
    }
  }
  events.sort((a, b) => a.time - b.time || (a.kind === b.kind ? 0 : a.kind === 'call' ? -1 : 1));
  const head: Node = { kind: 'call', entry: { id: -1, call: firstCall, required: false }, time: -Infinity, prev: null, next: null, match: null };
  let prev = head;
  for (const n of events) {
    prev.next = n;
    n.prev = prev;
    prev = n;
  }
  return head;
}

/** Unlink a call node and its return node from the event list. */
function lift(n: Node): void {
  n.prev!.next = n.next;
  if (n.next) n.next.prev = n.prev;
  const r = n.match;
  if (r) {
    r.prev!.next = r.next;
    if (r.next) r.next.prev = r.prev;
  }
}

/** Relink a node lifted by `lift` (in reverse order). */
function unlift(n: Node): void {
  const r = n.match;
  if (r) {
    r.prev!.next = r;
    if (r.next) r.next.prev = r;
  }
  n.prev!.next = n;
  if (n.next) n.next.prev = n;
}

/** For each observed value, the earliest completion of an ok op that observed it (a read of it, a cas expecting it). */
function observedDeadlines(entries: readonly Entry[]): Map<unknown, number> {
  const observedBy = new Map<unknown, number>();
  for (const e of entries) {
    const c = e.call;
    if (c.type !== 'ok') continue;
    const v = c.f === 'read' ? (c.value ?? null) : c.f === 'cas' ? (c.invokeValue as [RegValue, RegValue])[0] : undefined;
    if (v !== undefined) observedBy.set(v, Math.min(observedBy.get(v) ?? Infinity, c.completeTime));
  }
  return observedBy;
}

/** One configuration of the search: the calls that may go next, tried in turn, and the one tried now. */
interface Frame {
  cands: Node[];
  i: number;
  picked: Node | null;
  stateBefore: RegValue;
  /** The operation that cannot wait past this point (the first return event, or a required op left). */
  blocker: Entry | undefined;
}

/** The deepest point the search reached, for the failure witness. */
interface Deepest {
  order: number[];
  state: RegValue;
  blocked: number;
}

/** The WGL depth-first search over one key's entries, with its memo and backtracking stack. */
class RegisterSearch {
  private readonly entries: Entry[];
  private readonly observed: Set<unknown>;
  private readonly casNotSwapped: boolean;
  private readonly head: Node;
  private readonly observedBy: Map<unknown, number>;
  private requiredLeft: number;
  private readonly linearized: Uint8Array;
  private readonly cache = new Set<string>();
  private state: RegValue = null;
  private steps = 0;
  /** Ids linearized so far, in order (the current branch of the search). */
  private readonly path: number[] = [];
  private deepest: Deepest | undefined;
  private readonly frames: Frame[];

  constructor(
    private readonly key: string,
    calls: readonly Call[],
    private readonly searchStatesMax: number,
  ) {
    const p = prepareEntries(calls);
    this.entries = p.entries;
    this.observed = p.observed;
    this.casNotSwapped = p.casNotSwapped;
    this.head = buildEventList(this.entries, calls[0]!);
    this.requiredLeft = this.entries.filter((e) => e.required).length;
    this.linearized = new Uint8Array(this.entries.length);
    // When an op must have happened by: its completion; for an info write or cas, which may happen any
    // time after its invocation, the earliest completion of an op that observed its value (a read of
    // it, a cas expecting it) — it must precede that one — else never.
    this.observedBy = observedDeadlines(this.entries);
    this.frames = [this.open()];
  }

  /** Record the blocked op if the current branch is the deepest so far. */
  private noteStuck(blocked: Entry): void {
    if (!this.deepest || this.path.length > this.deepest.order.length) this.deepest = { order: this.path.slice(), state: this.state, blocked: blocked.id };
  }

  /** The memo key for (linearized set, state). */
  private cacheKey(s: RegValue): string {
    // Values no operation can tell apart — written but never read nor expected by a cas — are one state
    // for the memo: from (set, u1) and (set, u2) the same continuations are possible.
    return `${Buffer.from(this.linearized).toString('latin1')}|${this.observed.has(s) ? `${typeof s}:${String(s)}` : 'unobserved'}`;
  }

  /**
   * An operation that leaves the state as it is (a read, a cas that answered "not swapped", a write of
   * one unobserved value over another) and can be linearized now is linearized now, as the only choice
   * (Lowe's "just-in-time" idea, for a register): given any linearization that places it later, taking
   * it out there changes no other operation's state, and putting it first breaks no real-time order —
   * it is a candidate, so nothing not yet linearized returned before it was invoked. Without this, a
   * fault that leaves many reads and writes concurrent makes the search try every subset of the reads
   * (2^n orders that all end the same).
   */
  private forcedNow(c: Call, s: RegValue): boolean {
    if (c.f === 'read') return true;
    if (c.f === 'cas') return c.type === 'ok' && c.value !== true;
    // A write of an unobserved value while the state is one already (no op tells them apart): in a
    // linearization that places it later, what follows it up to the next write cannot depend on the
    // state (no read or swapping cas accepts an unobserved value, and with no "not swapped" cas on the
    // key nothing needs it different) — an info cas there did not swap and is left out — so it can
    // equally go first. Many writes left concurrent by a fault then cost one order, not all of them.
    return c.f === 'write' && c.type === 'ok' && !this.casNotSwapped && !this.observed.has(s) && !this.observed.has(written(c));
  }

  /** When the op behind node n must have happened by. */
  private deadline(n: Node): number {
    return n.entry.required ? n.entry.call.completeTime : (this.observedBy.get(written(n.entry.call)) ?? Infinity);
  }

  /** Open a frame for the current configuration. */
  private open(): Frame {
    // Candidates: the calls before the first return event of an op not linearized yet. Tried earliest
    // deadline first (the op that must complete soonest): on a valid history the first path is
    // nearly always right; info calls, which may wait forever, come last.
    const cands: Node[] = [];
    let n = this.head.next;
    while (n !== null && n.kind === 'call') {
      cands.push(n);
      n = n.next;
    }
    const state = this.state;
    const blocker = n !== null ? n.entry : this.entries.find((e) => e.required && this.linearized[e.id] === 0);
    const forced = cands.find((c) => this.forcedNow(c.entry.call, state) && apply(state, c.entry.call).ok);
    if (forced) return { cands: [forced], i: 0, picked: null, stateBefore: state, blocker };
    cands.sort((x, y) => this.deadline(x) - this.deadline(y));
    return { cands, i: 0, picked: null, stateBefore: state, blocker };
  }

  /** Undo the frame's current pick, if any, so its next candidate can be tried. */
  private undoPick(f: Frame): void {
    if (f.picked === null) return;
    const n = f.picked;
    f.picked = null;
    this.state = f.stateBefore;
    this.linearized[n.entry.id] = 0;
    if (n.entry.required) this.requiredLeft++;
    unlift(n);
    this.path.pop();
  }

  /** Try the frame's remaining candidates; push a frame for the first new configuration. 'budget' when out of steps. */
  private advance(f: Frame): boolean | 'budget' {
    while (f.i < f.cands.length) {
      if (++this.steps > this.searchStatesMax) return 'budget';
      const n = f.cands[f.i++]!;
      const r = apply(this.state, n.entry.call);
      if (!r.ok) continue;
      this.linearized[n.entry.id] = 1;
      const k = this.cacheKey(r.next);
      if (this.cache.has(k)) {
        this.linearized[n.entry.id] = 0;
        continue;
      }
      this.cache.add(k);
      f.picked = n;
      this.state = r.next;
      if (n.entry.required) this.requiredLeft--;
      lift(n);
      this.path.push(n.entry.id);
      this.frames.push(this.open());
      return true;
    }
    return false;
  }

  /** Run the search to a verdict. */
  run(): KeyResult {
    const { key, entries } = this;
    while (this.requiredLeft > 0) {
      const f = this.frames[this.frames.length - 1];
      if (f === undefined) return failure(key, entries, this.deepest);
      this.undoPick(f);
      const advanced = this.advance(f);
      if (advanced === 'budget') return { key, valid: 'unknown', ops: entries.length };
      if (!advanced) {
        if (f.blocker) this.noteStuck(f.blocker);
        this.frames.pop();
      }
    }
    return { key, valid: true, ops: entries.length };
  }
}

/** Check one key's calls. `searchStatesMax` bounds the work; past it the verdict is 'unknown'. */
export function checkRegisterKey(key: string, calls: readonly Call[], searchStatesMax = 2_000_000): KeyResult {
  return new RegisterSearch(key, calls, searchStatesMax).run();
}

/** Prefix ops shown before the stuck point. */
const WITNESS_PREFIX_OPS = 6;
/** Concurrent ops shown beside the blocked one. */
const WITNESS_CONCURRENT_OPS = 12;

function failure(key: string, entries: Entry[], deepest: Deepest | undefined): KeyResult {
  const w = (e: Entry, role: WitnessOp['role']): WitnessOp => ({ index: e.call.invokeIndex, process: e.call.process, f: e.call.f, invoke: e.call.invokeValue, result: e.call.value, type: e.call.type, role });
  if (!deepest) return { key, valid: false, ops: entries.length, witness: entries.slice(0, WITNESS_CONCURRENT_OPS).map((e) => w(e, 'concurrent')) };
  const blocked = entries[deepest.blocked]!;
  const inPrefix = new Set(deepest.order);
  const concurrent = entries.filter((e) => e !== blocked && !inPrefix.has(e.id) && e.call.invokeTime <= blocked.call.completeTime && e.call.completeTime >= blocked.call.invokeTime);
  const witness = [
    ...deepest.order.slice(-WITNESS_PREFIX_OPS).map((id) => w(entries[id]!, 'prefix')),
    w(blocked, 'blocked'),
    ...concurrent.slice(0, WITNESS_CONCURRENT_OPS).map((e) => w(e, 'concurrent')),
  ];
  return { key, valid: false, ops: entries.length, witness, stuck: { prefixOps: deepest.order.length, state: deepest.state, blockedIndex: blocked.call.invokeIndex } };
}

export function checkLinearizableRegisters(history: readonly HistoryOp[], searchStatesMax?: number): LinearizabilityResult {
  const byKey = new Map<string, Call[]>();
  for (const c of pairCalls(history)) {
    const k = c.key ?? '';
    let arr = byKey.get(k);
    if (!arr) byKey.set(k, (arr = []));
    arr.push(c);
  }
  const failures: KeyResult[] = [];
  const unknown: KeyResult[] = [];
  for (const [k, calls] of byKey) {
    const r = checkRegisterKey(k, calls, searchStatesMax);
    if (r.valid === false) failures.push(r);
    else if (r.valid === 'unknown') unknown.push(r);
  }
  return { valid: failures.length ? false : unknown.length ? 'unknown' : true, keys: byKey.size, failures, unknown };
}
