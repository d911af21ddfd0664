/**
 * Creating a new group. The initial configuration is written into the log itself, as one committed
 * addVoter entry per initial voter (term 1, indexes 1..n), exactly the same bytes on every initial
 * member (etcd's Bootstrap). Why in the log and not only in storage: a replica added later replays
 * the log from index 1 (when nothing was compacted yet) and must arrive at the same configuration as
 * everyone else — with the initial members only in other replicas' storage it would believe it is
 * alone and elect itself.
 */
import { assert } from '../common/assert';
import type { NodeId } from '../common/ids';
import { encodeConfChange } from './conf-change';
import type { Entry, HardState } from './types';
import { EntryType } from './types';
import type { LogStorage } from './wal/log-storage';

export const BOOTSTRAP_TERM = 1;

export function bootstrapEntries(voters: readonly NodeId[]): Entry[] {
  return voters.map((node, i) => ({ term: BOOTSTRAP_TERM, index: i + 1, type: EntryType.confChange, data: encodeConfChange({ type: 'addVoter', node }) }));
}

/**
 * Write the bootstrap state into an empty storage of an initial member (the caller syncs it). New
 * replicas added later start from an empty storage instead and learn everything from the leader.
 */
export function bootstrapStorage(storage: LogStorage, voters: readonly NodeId[]): void {
  assert(voters.length > 0, 'bootstrap needs at least one voter');
  assert(storage.lastIndex() === 0 && storage.initialState().hardState.term === 0, 'bootstrap needs an empty storage');
  const ents = bootstrapEntries(voters);
  storage.append(ents);
  const hs: HardState = { term: BOOTSTRAP_TERM, vote: '', commit: ents.length };
  storage.setHardState(hs);
  storage.setConfState({ voters: [...voters], learners: [] });
}
