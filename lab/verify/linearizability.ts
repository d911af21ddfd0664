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

/** Check one key's calls. `searchStatesMax` bounds the work; past it the verdict is 'unknown'. */
export function checkRegisterKey(key: string, calls: readonly Call[], searchStatesMax = 2_000_000): KeyResult {
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
  const written = (c: Call): unknown => (c.f === 'cas' ? (c.invokeValue as [RegValue, RegValue])[1] : c.invokeValue);
  for (const c of calls) {
    if (c.type === 'fail') continue;
    if (c.type === 'info' && c.f === 'read') continue;
    if (!casNotSwapped && c.type === 'info' && (c.f === 'write' || c.f === 'cas') && !observed.has(written(c))) continue;
    entries.push({ id: entries.length, call: c, required: c.type === 'ok' });
  }
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
  const head: Node = { kind: 'call', entry: { id: -1, call: calls[0]!, required: false }, time: -Infinity, prev: null, next: null, match: null };
  let prev = head;
  for (const n of events) {
    prev.next = n;
    n.prev = prev;
    prev = n;
  }
  const lift = (n: Node): void => {
    n.prev!.next = n.next;
    if (n.next) n.next.prev = n.prev;
    const r = n.match;
    if (r) {
      r.prev!.next = r.next;
      if (r.next) r.next.prev = r.prev;
    }
  };
  const unlift = (n: Node): void => {
    const r = n.match;
    if (r) {
      r.prev!.next = r;
      if (r.next) r.next.prev = r;
    }
    n.prev!.next = n;
    if (n.next) n.next.prev = n;
  };

  let requiredLeft = entries.filter((e) => e.required).length;
  const linearized = new Uint8Array(entries.length);
  const cache = new Set<string>();
  let state: RegValue = null;
  let steps = 0;
  /** Ids linearized so far, in order (the current branch of the search). */
  const path: number[] = [];
  // The deepest point the search reached, for the failure witness.
  let deepest: { order: number[]; state: RegValue; blocked: number } | undefined;
  const noteStuck = (blocked: Entry): void => {
    if (!deepest || path.length > deepest.order.length) deepest = { order: path.slice(), state, blocked: blocked.id };
  };
  // Values no operation can tell apart — written but never read nor expected by a cas — are one state
  // for the memo: from (set, u1) and (set, u2) the same continuations are possible.
  const cacheKey = (s: RegValue): string => `${Buffer.from(linearized).toString('latin1')}|${observed.has(s) ? `${typeof s}:${String(s)}` : 'unobserved'}`;
  /**
   * An operation that leaves the state as it is (a read, a cas that answered "not swapped", a write of
   * one unobserved value over another) and can be linearized now is linearized now, as the only choice
   * (Lowe's "just-in-time" idea, for a register): given any linearization that places it later, taking
   * it out there changes no other operation's state, and putting it first breaks no real-time order —
   * it is a candidate, so nothing not yet linearized returned before it was invoked. Without this, a
   * fault that leaves many reads and writes concurrent makes the search try every subset of the reads
   * (2^n orders that all end the same).
   */
  const forcedNow = (c: Call, s: RegValue): boolean => {
    if (c.f === 'read') return true;
    if (c.f === 'cas') return c.type === 'ok' && c.value !== true;
    // A write of an unobserved value while the state is one already (no op tells them apart): in a
    // linearization that places it later, what follows it up to the next write cannot depend on the
    // state (no read or swapping cas accepts an unobserved value, and with no "not swapped" cas on the
    // key nothing needs it different) — an info cas there did not swap and is left out — so it can
    // equally go first. Many writes left concurrent by a fault then cost one order, not all of them.
    return c.f === 'write' && c.type === 'ok' && !casNotSwapped && !observed.has(s) && !observed.has(written(c));
  };
  // When an op must have happened by: its completion; for an info write or cas, which may happen any
  // time after its invocation, the earliest completion of an op that observed its value (a read of
  // it, a cas expecting it) — it must precede that one — else never.
  const observedBy = new Map<unknown, number>();
  for (const e of entries) {
    const c = e.call;
    if (c.type !== 'ok') continue;
    const v = c.f === 'read' ? (c.value ?? null) : c.f === 'cas' ? (c.invokeValue as [RegValue, RegValue])[0] : undefined;
    if (v !== undefined) observedBy.set(v, Math.min(observedBy.get(v) ?? Infinity, c.completeTime));
  }
  const deadline = (n: Node): number => (n.entry.required ? n.entry.call.completeTime : (observedBy.get(written(n.entry.call)) ?? Infinity));

  /** One configuration of the search: the calls that may go next, tried in turn, and the one tried now. */
  interface Frame {
    cands: Node[];
    i: number;
    picked: Node | null;
    stateBefore: RegValue;
    /** The operation that cannot wait past this point (the first return event, or a required op left). */
    blocker: Entry | undefined;
  }
  const open = (): Frame => {
    // Candidates: the calls before the first return event of an op not linearized yet. Tried earliest
    // deadline first (the op that must complete soonest): on a valid history the first path is
    // nearly always right; info calls, which may wait forever, come last.
    const cands: Node[] = [];
    let n = head.next;
    while (n !== null && n.kind === 'call') {
      cands.push(n);
      n = n.next;
    }
    const blocker = n !== null ? n.entry : entries.find((e) => e.required && linearized[e.id] === 0);
    const forced = cands.find((c) => forcedNow(c.entry.call, state) && apply(state, c.entry.call).ok);
    if (forced) return { cands: [forced], i: 0, picked: null, stateBefore: state, blocker };
    cands.sort((x, y) => deadline(x) - deadline(y));
    return { cands, i: 0, picked: null, stateBefore: state, blocker };
  };
  const frames: Frame[] = [open()];

  while (requiredLeft > 0) {
    const f = frames[frames.length - 1];
    if (f === undefined) return failure(key, entries, deepest);
    if (f.picked !== null) {
      const n = f.picked;
      f.picked = null;
      state = f.stateBefore;
      linearized[n.entry.id] = 0;
      if (n.entry.required) requiredLeft++;
      unlift(n);
      path.pop();
    }
    let advanced = false;
    while (f.i < f.cands.length) {
      if (++steps > searchStatesMax) return { key, valid: 'unknown', ops: entries.length };
      const n = f.cands[f.i++]!;
      const r = apply(state, n.entry.call);
      if (!r.ok) continue;
      linearized[n.entry.id] = 1;
      const k = cacheKey(r.next);
      if (cache.has(k)) {
        linearized[n.entry.id] = 0;
        continue;
      }
      cache.add(k);
      f.picked = n;
      state = r.next;
      if (n.entry.required) requiredLeft--;
      lift(n);
      path.push(n.entry.id);
      frames.push(open());
      advanced = true;
      break;
    }
    if (!advanced) {
      if (f.blocker) noteStuck(f.blocker);
      frames.pop();
    }
  }
  return { key, valid: true, ops: entries.length };
}

/** Prefix ops shown before the stuck point. */
const WITNESS_PREFIX_OPS = 6;
/** Concurrent ops shown beside the blocked one. */
const WITNESS_CONCURRENT_OPS = 12;

function failure(key: string, entries: Entry[], deepest: { order: number[]; state: RegValue; blocked: number } | undefined): KeyResult {
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
