/**
 * Histories in Jepsen's shape: every operation is an `invoke` followed by exactly one completion
 * (`ok`: it happened, `fail`: it certainly did not, `info`: unknown — it may or may not have happened,
 * and the process that issued it is retired). Saved as JSON so outside checkers can read them.
 */
export type OpType = 'invoke' | 'ok' | 'fail' | 'info';

export interface HistoryOp {
  index: number;
  process: number;
  type: OpType;
  /** Operation name: read, write, cas, transfer, add, txn, ... */
  f: string;
  value: unknown;
  /** Monotonic nanoseconds since the start of the run. */
  time: number;
  /** Optional key for per-key workloads. */
  key?: string;
  error?: string;
  /** Facts for whoever reads an anomaly (transaction id, read and commit hybrid times); never checked. */
  meta?: Record<string, string>;
}

/** An invocation paired with its completion (completion undefined when the run ended first). */
export interface Call {
  process: number;
  f: string;
  key?: string;
  invokeValue: unknown;
  invokeTime: number;
  type: 'ok' | 'fail' | 'info';
  value: unknown;
  completeTime: number;
  invokeIndex: number;
}

/** Recorder used by workloads: append-only, assigns indexes and times. */
export class HistoryRecorder {
  readonly ops: HistoryOp[] = [];
  private readonly t0 = process.hrtime.bigint();

  private now(): number {
    return Number(process.hrtime.bigint() - this.t0);
  }

  /** Nanoseconds since the recorder started: the time base of fault windows recorded beside the history. */
  nowNs(): number {
    return this.now();
  }

  invoke(processId: number, f: string, value: unknown, key?: string): HistoryOp {
    const op: HistoryOp = { index: this.ops.length, process: processId, type: 'invoke', f, value, time: this.now(), ...(key !== undefined ? { key } : {}) };
    this.ops.push(op);
    return op;
  }

  complete(inv: HistoryOp, type: 'ok' | 'fail' | 'info', value: unknown, error?: string, meta?: Record<string, string>): void {
    this.ops.push({ index: this.ops.length, process: inv.process, type, f: inv.f, value, time: this.now(), ...(inv.key !== undefined ? { key: inv.key } : {}), ...(error ? { error } : {}), ...(meta ? { meta } : {}) });
  }
}

/** Pair invocations with completions; an invocation with no completion counts as `info` at +∞. */
export function pairCalls(history: readonly HistoryOp[]): Call[] {
  const open = new Map<number, HistoryOp>();
  const calls: Call[] = [];
  for (const op of history) {
    if (op.type === 'invoke') {
      if (open.has(op.process)) throw new Error(`process ${op.process} invoked twice without completing (index ${op.index})`);
      open.set(op.process, op);
      continue;
    }
    const inv = open.get(op.process);
    if (!inv) throw new Error(`completion without invocation for process ${op.process} (index ${op.index})`);
    open.delete(op.process);
    calls.push({ process: op.process, f: inv.f, ...(inv.key !== undefined ? { key: inv.key } : {}), invokeValue: inv.value, invokeTime: inv.time, type: op.type, value: op.value, completeTime: op.type === 'info' ? Infinity : op.time, invokeIndex: inv.index });
  }
  for (const inv of open.values()) {
    calls.push({ process: inv.process, f: inv.f, ...(inv.key !== undefined ? { key: inv.key } : {}), invokeValue: inv.value, invokeTime: inv.time, type: 'info', value: undefined, completeTime: Infinity, invokeIndex: inv.index });
  }
  return calls.sort((a, b) => a.invokeIndex - b.invokeIndex);
}

export interface OpCounts {
  ok: number;
  fail: number;
  info: number;
}

/** What failed or ended unknown, grouped by reason (most frequent first). */
export interface FailReason {
  reason: string;
  fail: number;
  info: number;
}

/** The reason of a completion's error text: its error code when it starts with one, else its first words. */
export function reasonOf(error: string | undefined): string {
  if (!error) return 'no error text';
  const code = /^([A-Z][A-Z0-9_]+):/.exec(error);
  if (code) return code[1]!;
  const head = error.split(' (')[0]!.trim();
  return head.length > 60 ? `${head.slice(0, 57)}...` : head;
}

export function failReasons(history: readonly HistoryOp[]): FailReason[] {
  const by = new Map<string, FailReason>();
  for (const op of history) {
    if (op.type !== 'fail' && op.type !== 'info') continue;
    const reason = reasonOf(op.error);
    let r = by.get(reason);
    if (!r) by.set(reason, (r = { reason, fail: 0, info: 0 }));
    r[op.type]++;
  }
  return [...by.values()].sort((a, b) => b.fail + b.info - (a.fail + a.info) || (a.reason < b.reason ? -1 : 1));
}

export function countOps(history: readonly HistoryOp[]): OpCounts {
  const c = { ok: 0, fail: 0, info: 0 };
  for (const op of history) if (op.type !== 'invoke') c[op.type]++;
  return c;
}
