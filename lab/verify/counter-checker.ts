/**
 * Counter (Jepsen's counter, made sharper by increments that answer their new value): each `add`
 * increments one key's counter by 1 and answers the counter's new value; `read` reads it. With n_ok
 * adds acknowledged and n_info adds of unknown outcome:
 * - two acknowledged adds never answer the same value (one was lost or counted twice: "duplicate-answer");
 * - an add's answer is at least 1 + the adds acknowledged before it began, and at most the adds begun
 *   before it ended ("answer-out-of-range": an increment lost, or one invented);
 * - a read lies between the adds acknowledged before it began and the adds begun before it ended
 *   ("read-out-of-range");
 * - the final read lies in [n_ok, n_ok + n_info] ("final-out-of-range"; below n_ok, acknowledged
 *   increments were lost).
 */
import { pairCalls, type Call, type HistoryOp } from './history';

export interface CounterResult {
  valid: boolean;
  anomalies: Record<string, number>;
  okAdds: number;
  infoAdds: number;
  reads: number;
  finalReads: number;
  lost: number;
  details: string[];
}

/** Count of sorted `xs` strictly below `t`. */
function below(xs: readonly number[], t: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function checkCounter(history: readonly HistoryOp[]): CounterResult {
  const byKey = new Map<string, Call[]>();
  for (const c of pairCalls(history)) {
    const k = c.key ?? '';
    let l = byKey.get(k);
    if (!l) byKey.set(k, (l = []));
    l.push(c);
  }
  const r: CounterResult = { valid: true, anomalies: {}, okAdds: 0, infoAdds: 0, reads: 0, finalReads: 0, lost: 0, details: [] };
  const flag = (name: string, line: string): void => {
    r.anomalies[name] = (r.anomalies[name] ?? 0) + 1;
    if (r.details.length < 20) r.details.push(line);
  };
  for (const [key, calls] of byKey) {
    const adds = calls.filter((c) => c.f === 'add' && c.type !== 'fail');
    const okAdds = adds.filter((c) => c.type === 'ok');
    const okDone = okAdds.map((c) => c.completeTime).sort((a, b) => a - b);
    const begun = adds.map((c) => c.invokeTime).sort((a, b) => a - b);
    r.okAdds += okAdds.length;
    r.infoAdds += adds.length - okAdds.length;
    const seen = new Map<number, number>();
    for (const a of okAdds) {
      const v = Number(a.value);
      const lo = below(okDone, a.invokeTime) + 1;
      const hi = below(begun, a.completeTime);
      if (v < lo || v > hi) flag('answer-out-of-range', `key ${key}: an add answered ${v}, outside [${lo}, ${hi}]`);
      seen.set(v, (seen.get(v) ?? 0) + 1);
    }
    for (const [v, n] of seen) if (n > 1) flag('duplicate-answer', `key ${key}: ${n} acknowledged adds answered ${v}`);
    for (const c of calls) {
      if ((c.f !== 'read' && c.f !== 'final-read') || c.type !== 'ok') continue;
      const v = Number(c.value);
      if (c.f === 'read') {
        r.reads++;
        const lo = below(okDone, c.invokeTime);
        const hi = below(begun, c.completeTime);
        if (v < lo || v > hi) flag('read-out-of-range', `key ${key}: a read saw ${v}, outside [${lo}, ${hi}]`);
        continue;
      }
      r.finalReads++;
      if (v < okAdds.length || v > adds.length) {
        flag('final-out-of-range', `key ${key}: the final read saw ${v}; ${okAdds.length} adds acknowledged, ${adds.length - okAdds.length} unknown`);
        r.lost += Math.max(0, okAdds.length - v);
      }
    }
  }
  r.valid = Object.keys(r.anomalies).length === 0 && r.finalReads === byKey.size && byKey.size > 0;
  return r;
}
