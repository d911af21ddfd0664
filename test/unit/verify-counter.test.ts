/**
 * The counter checker (lab/verify/counter-checker.ts) on hand-made histories: a valid one, and each
 * anomaly it exists to find — an increment counted twice, one lost, one invented, a stale read.
 */
import { describe, expect, it } from 'vitest';
import { checkCounter } from '../../lab/verify/counter-checker';
import { HistoryRecorder } from '../../lab/verify/history';

type Step = [process: number, f: 'add' | 'read' | 'final-read', type: 'ok' | 'info' | 'fail', value: number | null];

/** Runs `steps` one after the other (each invoked and completed before the next), all on key "k". */
function history(steps: Step[], concurrent: Step[] = []): ReturnType<HistoryRecorder['invoke']>[] {
  const r = new HistoryRecorder();
  // Concurrent ops are invoked first and completed last: they overlap everything.
  const open = concurrent.map(([p, f]) => r.invoke(p, f, f === 'add' ? 1 : null, 'k'));
  for (const [p, f, type, v] of steps) r.complete(r.invoke(p, f, f === 'add' ? 1 : null, 'k'), type, v);
  concurrent.forEach(([, , type, v], i) => r.complete(open[i]!, type, v));
  return r.ops;
}

describe('counter checker', () => {
  it('verify counter: sequential increments answering 1..n, reads in range and a final read of n are valid; an unknown increment may or may not count', () => {
    const ok = checkCounter(history([[0, 'add', 'ok', 1], [1, 'add', 'ok', 2], [0, 'read', 'ok', 2], [1, 'add', 'info', null], [2, 'read', 'ok', 3], [3, 'final-read', 'ok', 3]]));
    expect(ok).toMatchObject({ valid: true, okAdds: 2, infoAdds: 1, anomalies: {} });
    expect(checkCounter(history([[0, 'add', 'ok', 1], [1, 'add', 'info', null], [3, 'final-read', 'ok', 1]])).valid).toBe(true);
  });

  it('verify counter: two acknowledged increments answering the same value, a lost increment, an invented one and a stale read are each found', () => {
    expect(checkCounter(history([[0, 'add', 'ok', 1], [1, 'add', 'ok', 1], [3, 'final-read', 'ok', 2]])).anomalies).toMatchObject({ 'answer-out-of-range': 1, 'duplicate-answer': 1 });
    const lost = checkCounter(history([[0, 'add', 'ok', 1], [1, 'add', 'ok', 2], [3, 'final-read', 'ok', 1]]));
    expect(lost.anomalies).toEqual({ 'final-out-of-range': 1 });
    expect(lost.lost).toBe(1);
    expect(checkCounter(history([[0, 'add', 'ok', 1], [3, 'final-read', 'ok', 2]])).anomalies).toEqual({ 'final-out-of-range': 1 });
    expect(checkCounter(history([[0, 'add', 'ok', 3], [3, 'final-read', 'ok', 1]])).anomalies).toMatchObject({ 'answer-out-of-range': 1 });
    expect(checkCounter(history([[0, 'add', 'ok', 1], [1, 'read', 'ok', 0], [3, 'final-read', 'ok', 1]])).anomalies).toEqual({ 'read-out-of-range': 1 });
  });

  it('verify counter: an increment concurrent with a read may or may not be seen by it', () => {
    const c = checkCounter(history([[1, 'read', 'ok', 0], [2, 'read', 'ok', 1], [3, 'final-read', 'ok', 1]], [[0, 'add', 'ok', 1]]));
    expect(c).toMatchObject({ valid: true, anomalies: {} });
  });

  it('verify counter: a history without a final read is not valid', () => {
    expect(checkCounter(history([[0, 'add', 'ok', 1]])).valid).toBe(false);
  });
});
