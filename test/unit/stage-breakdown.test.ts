/**
 * bench/stage-breakdown.ts: the stage-trace files of a client, a leader and two followers (one line
 * per stage, common/stage-trace.ts's format) are joined by Raft index into one write's instants, the
 * follower shown being the one whose ack came first.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { joinWrites, readTraceDir, renderBreakdown } from '../../bench/stage-breakdown';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stage-breakdown-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Lines at `ms` after a base (ns), as the trace writes them. */
function write(pid: string, lines: Array<[number, string, string, number]>): void {
  const base = 5_000_000_000n;
  fs.writeFileSync(path.join(dir, `${pid}.trace`), lines.map(([ms, stage, group, index]) => `${base + BigInt(Math.round(ms * 1e6))} ${stage} ${group} ${index}`).join('\n') + '\n');
}

describe('stage breakdown', () => {
  it('stage breakdown: one write across four processes, joined by its Raft index; the quicker follower is the one shown', () => {
    const g = 'tablet1';
    write('100', [
      [0, 'rpc.call.Write', '-', 1],
      [9, 'rpc.answer.Write', '-', 1],
    ]);
    write('200', [
      [1, 'rpc.in.Write', '-', 1],
      [1.25, 'write.start', g, 0],
      [1.5, 'propose', g, 7],
      [1.75, 'append', g, 7],
      [1.8, 'send.append', g, 7],
      [1.8, 'send.append', g, 7],
      [1.85, 'transport.flush', '-', 1],
      [4, 'synced', g, 7],
      [5, 'rpc.in.RaftBatch', '-', 0],
      [5.1, 'step.appendResp', g, 7],
      [5.5, 'commit', g, 7],
      [5.5, 'apply.start', g, 7],
      [7.5, 'apply.end', g, 7],
      [7.6, 'write.end', g, 0],
      [7.7, 'rpc.out', '-', 0],
    ]);
    // Follower 300 acks at 4.5, follower 400 only at 6: 300 is shown.
    write('300', [
      [2.5, 'rpc.in.RaftBatch', '-', 0],
      [2.6, 'step.append', g, 7],
      [2.8, 'append', g, 7],
      [4.4, 'synced', g, 7],
      [4.5, 'send.appendResp', g, 7],
      [4.55, 'transport.flush', '-', 1],
    ]);
    write('400', [
      [3, 'rpc.in.RaftBatch', '-', 0],
      [3.1, 'step.append', g, 7],
      [3.2, 'append', g, 7],
      [5.9, 'synced', g, 7],
      [6, 'send.appendResp', g, 7],
      [6.1, 'transport.flush', '-', 1],
    ]);
    const writes = joinWrites(readTraceDir(dir), 0);
    expect(writes).toHaveLength(1);
    const w = writes[0]!;
    const d = (a: string, b: string): number => Math.round((w[b]! - w[a]!) * 1000) / 1000;
    expect(d('client call', 'leader rpc.in')).toBe(1);
    expect(d('leader send', 'leader flush')).toBe(0.05);
    expect(d('leader append', 'leader synced')).toBe(2.25);
    expect(d('f:append', 'f:synced')).toBe(1.6);
    expect(d('f:flush ack', 'leader ack frame')).toBe(0.45);
    expect(d('leader commit', 'leader apply.end')).toBe(2);
    expect(d('leader rpc.out', 'client answer')).toBe(1.3);
    expect(d('client call', 'client answer')).toBe(9);
    const table = renderBreakdown(writes);
    expect(table).toContain('| follower: fdatasync (append → synced) | 1.600 | 1.600 | 1.600 | 1 |');
    expect(table).toContain('| total: client call → answer | 9.000 | 9.000 | 9.000 | 1 |');
  });
});
