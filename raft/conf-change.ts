/**
 * Membership changes, one node at a time (Raft thesis §4.1; etcd's "simple" changes). A change is
 * an entry of type confChange; it takes effect when the host applies it and calls applyConfChange —
 * not when appended — and a leader allows one unapplied change at a time (pendingConfIndex). Any two
 * consecutive configurations then share a majority, and the leader's own-term no-op must commit before
 * a change can (Ongaro's 2015 fix), because pendingConfIndex starts at the leader's last index.
 */
import type { NodeId } from '../common/ids';
import type { ConfChange, ConfState } from './types';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeConfChange(cc: ConfChange): Uint8Array {
  return encoder.encode(JSON.stringify(cc));
}

/** Parse an entry payload; undefined if it is not a ConfChange (the caller treats that as corruption). */
export function decodeConfChange(data: Uint8Array): ConfChange | undefined {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const node = o['node'];
  if (typeof node !== 'string' || node.length === 0) return undefined;
  const id = node as NodeId;
  switch (o['type']) {
    case 'addVoter':
      return { type: 'addVoter', node: id };
    case 'addLearner':
      return { type: 'addLearner', node: id };
    case 'promoteLearner':
      return { type: 'promoteLearner', node: id };
    case 'removeNode':
      return { type: 'removeNode', node: id };
    default:
      return undefined;
  }
}

/** Why `cc` cannot apply to `conf`, or undefined when it can. */
export function confChangeError(conf: ConfState, cc: ConfChange): string | undefined {
  const isVoter = conf.voters.includes(cc.node);
  const isLearner = conf.learners.includes(cc.node);
  switch (cc.type) {
    case 'addVoter':
      return isVoter ? `${cc.node} is already a voter` : undefined;
    case 'addLearner':
      return isVoter ? `${cc.node} is a voter (demotion is not supported)` : isLearner ? `${cc.node} is already a learner` : undefined;
    case 'promoteLearner':
      return isLearner ? undefined : `${cc.node} is not a learner`;
    case 'removeNode':
      if (!isVoter && !isLearner) return `${cc.node} is not a member`;
      return isVoter && conf.voters.length === 1 ? 'cannot remove the last voter' : undefined;
  }
}

/**
 * The configuration after `cc`. Applying is total (an entry that made it into the log must apply
 * deterministically on every replica): a change that no longer makes sense is a no-op.
 */
export function applyToConfState(conf: ConfState, cc: ConfChange): ConfState {
  if (confChangeError(conf, cc) !== undefined) return { voters: [...conf.voters], learners: [...conf.learners] };
  const voters = conf.voters.filter((v) => v !== cc.node);
  const learners = conf.learners.filter((v) => v !== cc.node);
  switch (cc.type) {
    case 'addVoter':
    case 'promoteLearner':
      voters.push(cc.node);
      break;
    case 'addLearner':
      learners.push(cc.node);
      break;
    case 'removeNode':
      break;
  }
  return { voters, learners };
}
