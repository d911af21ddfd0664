/** Small helpers of RaftGroup (raft-group.ts), kept here to hold that file's size. */
import type { NodeId } from '../common/ids';
import { traceStage } from '../common/stage-trace';
import type { Message, RaftStatus } from './types';

/** The voter other than `self` with the highest match index (a leadership transfer's default target). */
export function mostCaughtUpOther(st: Pick<RaftStatus, 'conf' | 'progress'>, self: NodeId): NodeId | undefined {
  let target: NodeId | undefined;
  let best = -1;
  for (const v of st.conf.voters) {
    if (v === self) continue;
    const m = st.progress?.[v]?.match ?? -1;
    if (m > best) {
      best = m;
      target = v;
    }
  }
  return target;
}

/** Stage trace (common/stage-trace.ts) of Raft messages: one line each, `<stage>.<type>`, at the index it carries. */
export function traceMessages(stage: string, groupId: string, msgs: readonly Message[]): void {
  for (const m of msgs) {
    const index = m.type === 'append' ? (m.entries.length > 0 ? m.entries[m.entries.length - 1]!.index : m.commit) : m.type === 'appendResp' ? m.index : m.type === 'heartbeat' ? m.commit : 0;
    // An append without entries (a commit index, a probe) is `append0`.
    traceStage(`${stage}.${m.type}${m.type === 'append' && m.entries.length === 0 ? '0' : ''}`, groupId, index);
  }
}
