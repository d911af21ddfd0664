/**
 * The lock checker (lab/verify/lock-checker.ts) on hand-made histories: holders' appends in token
 * order are valid; an older holder's write after a newer one's, a lost or doubled acknowledged
 * append, and a refused append that shows up are each found.
 */
import { describe, expect, it } from 'vitest';
import { checkLocks } from '../../lab/verify/lock-checker';
import { HistoryRecorder } from '../../lab/verify/history';

type Step = [process: number, f: 'lock' | 'write' | 'final-read', type: 'ok' | 'info' | 'fail', value: string | number | null];

function history(steps: Step[]): ReturnType<HistoryRecorder['invoke']>[] {
  const r = new HistoryRecorder();
  for (const [p, f, type, v] of steps) r.complete(r.invoke(p, f, f === 'write' ? v : null, 'row'), type, v);
  return r.ops;
}

describe('lock checker', () => {
  it('verify lock: appends of successive holders in token order are valid; an unknown append may be missing', () => {
    const ok = checkLocks(history([[0, 'lock', 'ok', 5], [0, 'write', 'ok', '5:0'], [0, 'write', 'info', '5:1'], [1, 'lock', 'ok', 9], [1, 'write', 'ok', '9:0'], [1, 'write', 'fail', '9:1'], [2, 'final-read', 'ok', '5:0,9:0,']]));
    expect(ok).toMatchObject({ valid: true, anomalies: {}, grants: 2, okWrites: 2, refused: 1 });
  });

  it('verify lock: interleaved holders, lost, doubled and refused-but-present appends are anomalies', () => {
    const steps: Step[] = [[0, 'write', 'ok', '5:0'], [1, 'write', 'ok', '9:0'], [0, 'write', 'fail', '5:1']];
    expect(checkLocks(history([...steps, [2, 'final-read', 'ok', '5:0,9:0,5:1,']])).anomalies).toEqual({ 'fencing-violated': 1, unexpected: 1 });
    expect(checkLocks(history([...steps, [2, 'final-read', 'ok', '5:0,']])).anomalies).toEqual({ 'lost-write': 1 });
    expect(checkLocks(history([...steps, [2, 'final-read', 'ok', '5:0,5:0,9:0,']])).anomalies).toEqual({ 'duplicate-write': 1 });
    expect(checkLocks(history(steps)).anomalies).toEqual({ 'no-final-read': 1 });
  });
});
