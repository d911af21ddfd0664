/**
 * A leader hands out every Raft snapshot naming itself as the replica to copy from
 * (TabletSnapshots.ownSnapshots, tserver/tablet/tablet-snapshots.ts): the descriptor in its log names
 * the replica it copied from when it installed one, and that replica may be deleted since (the tablet
 * simulator's TABLET_SIM_DELETE_REMOVED, docs/architecture.md "Simulation").
 */
import { describe, expect, it } from 'vitest';
import { NodeId } from '../../common/ids';
import type { Message, Snapshot } from '../../raft';
import { TabletSnapshots, type TabletSnapshotsDeps } from '../../tserver/tablet/tablet-snapshots';
import type { SnapshotDescriptor } from '../../tserver/tablet/tablet-types';

const conf = { voters: [NodeId('a'), NodeId('b')], learners: [NodeId('c')] };
const descriptor = (sourceUuid: string): SnapshotDescriptor => ({ tabletId: 't1', sourceUuid, index: 40, schema: { schemaVersion: 3, tableName: 'tbl', schema: { columns: [], hashColumns: [], rangeColumns: [] } } });
const snapshotOf = (d: SnapshotDescriptor): Snapshot => ({ meta: { index: d.index, term: 2, conf }, data: new TextEncoder().encode(JSON.stringify(d)) });
const snapMsg = (s: Snapshot): Message => ({ type: 'snapshot', from: NodeId('b'), to: NodeId('c'), term: 5, snapshot: s });
const decode = (m: Message): SnapshotDescriptor => {
  if (m.type !== 'snapshot') throw new Error(`not a snapshot message: ${m.type}`);
  return JSON.parse(new TextDecoder().decode(m.snapshot.data)) as SnapshotDescriptor;
};

/** Only ownSnapshots runs here: it reads nothing of the replica but its uuid. */
const snapshotsOf = (selfUuid: string): TabletSnapshots => new TabletSnapshots({ selfUuid } as TabletSnapshotsDeps);

describe('snapshots a leader sends', () => {
  it('name the sender, whichever replica the installed descriptor was copied from; all else is kept', () => {
    const installed = snapshotOf(descriptor('a')); // b installed a snapshot copied from a
    const heartbeat: Message = { type: 'heartbeat', from: NodeId('b'), to: NodeId('a'), term: 5, commit: 40 };
    const out = snapshotsOf('b').ownSnapshots([heartbeat, snapMsg(installed)]);
    expect(out[0]).toBe(heartbeat);
    expect(decode(out[1]!)).toEqual({ ...descriptor('a'), sourceUuid: 'b' });
    expect(out[1]!.type === 'snapshot' && out[1]!.snapshot.meta).toEqual(installed.meta);
    // The log's own snapshot is shared with the Raft core: never changed.
    expect(JSON.parse(new TextDecoder().decode(installed.data))).toEqual(descriptor('a'));
  });

  it('pass a descriptor already naming the sender, and messages without snapshots, as they are', () => {
    const own = snapshotOf(descriptor('b'));
    const s = snapshotsOf('b');
    const msgs = [snapMsg(own)];
    const out = s.ownSnapshots(msgs);
    expect(out[0]!.type === 'snapshot' && out[0]!.snapshot.data).toBe(own.data);
    const none: Message[] = [];
    expect(s.ownSnapshots(none)).toBe(none);
  });
});
