/**
 * Raft snapshots of a tablet (remote bootstrap, docs/architecture.md §Raft): a snapshot is a small
 * descriptor (where to copy the databases from, the schema, the retryable requests and row locks);
 * installing one copies the source replica's databases over this replica's. A marker file makes an
 * interrupted install start again from empty databases at the next open. A leader sends every
 * snapshot as its own (ownSnapshots): the descriptor it installed names the replica it copied from,
 * which may be gone since.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import type { Logger } from '../../common/log';
import type { OpId } from '../../docdb';
import type { Message, Snapshot } from '../../raft';
import { parseRetryableImage, type RetryableRequests } from './retryable-requests';
import { parseRowLockImage, type RowLockTable } from './row-locks';
import { saveRowLocks } from './replicated-state';
import type { TabletDbs } from './tablet-dbs';
import type { TabletEvents } from './tablet-events';
import { parseTableSchema, type TabletMeta } from './tablet-meta';
import type { TabletOp } from './tablet-op';
import { TabletState, type DbName, type SnapshotDescriptor } from './tablet-types';

const BOOTSTRAP_MARKER = 'remote-bootstrap-in-progress';

export interface TabletSnapshotsDeps {
  dir: string;
  selfUuid: string;
  log: Logger;
  meta(): TabletMeta;
  dbs: TabletDbs;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
  /** Copy the source replica's databases: calls onChunk with batches of key/values, per database. */
  fetchSnapshot(desc: SnapshotDescriptor, onChunk: (db: DbName, pairs: Array<[Uint8Array, Uint8Array]>) => Promise<void>): Promise<void>;
  setState(s: TabletState): void;
  /** Before the databases close: nothing of the replica's background work still uses them. */
  quiesce(): Promise<void>;
  /** After new databases opened: what the replica derives from them (floors, transactions with intents). */
  databasesOpened(): Promise<void>;
  changeSchema(op: Extract<TabletOp, { type: 'CHANGE_SCHEMA' }>, opId: OpId): void;
  /** Tell DocDB the replica's schema (its columns). */
  applySchema(): void;
  events(): TabletEvents | undefined;
  metrics: { snapshotsInstalled: number };
}

export class TabletSnapshots {
  /** The last descriptor ownSnapshots renamed, and its renamed copy (one snapshot is resent to each follower that needs it). */
  private renamed: { from: Uint8Array; to: Uint8Array } | undefined;

  constructor(private readonly deps: TabletSnapshotsDeps) {}

  /** A remote bootstrap was interrupted (the databases are partial). */
  interrupted(): boolean {
    return fs.existsSync(path.join(this.deps.dir, BOOTSTRAP_MARKER));
  }

  create(index: number): Uint8Array {
    const m = this.deps.meta();
    const d: SnapshotDescriptor = { tabletId: m.tabletId, sourceUuid: this.deps.selfUuid, index, schema: { schemaVersion: m.schemaVersion, tableName: m.tableName, schema: m.schema }, retryable: this.deps.retryable.image(), rowLocks: this.deps.rowLocks.image() };
    return new TextEncoder().encode(JSON.stringify(d));
  }

  /**
   * Outgoing Raft messages with every snapshot naming this replica as the one to copy from. The
   * log's snapshot of a replica that installed one is the descriptor it received, naming the replica
   * it copied from; as a leader it handed that on, and a follower's remote bootstrap failed once
   * that replica was deleted (forever on an idle tablet, whose log GC makes no new snapshot: the
   * tablet simulator's TABLET_SIM_DELETE_REMOVED). This replica's databases serve as well: they
   * hold at least everything up to the snapshot's index, and the follower replays what follows
   * idempotently (the floors of the apply pipeline); the descriptor's schema and images stand for
   * that index whoever serves the databases.
   */
  ownSnapshots(msgs: Message[]): Message[] {
    if (!msgs.some((m) => m.type === 'snapshot')) return msgs;
    return msgs.map((m) => (m.type === 'snapshot' ? { ...m, snapshot: { meta: m.snapshot.meta, data: this.ownDescriptor(m.snapshot.data) } } : m));
  }

  private ownDescriptor(data: Uint8Array): Uint8Array {
    if (this.renamed?.from === data) return this.renamed.to;
    let desc: SnapshotDescriptor;
    try {
      desc = JSON.parse(new TextDecoder().decode(data)) as SnapshotDescriptor;
    } catch {
      return data; // the follower's install reports it (CORRUPTION)
    }
    if (desc.sourceUuid === this.deps.selfUuid) return data;
    const to = new TextEncoder().encode(JSON.stringify({ ...desc, sourceUuid: this.deps.selfUuid }));
    this.renamed = { from: data, to };
    return to;
  }

  async install(snap: Snapshot): Promise<void> {
    const { deps } = this;
    const tabletId = deps.meta().tabletId;
    let desc: SnapshotDescriptor;
    try {
      desc = JSON.parse(new TextDecoder().decode(snap.data)) as SnapshotDescriptor;
    } catch {
      throw new DbError(ErrorCode.CORRUPTION, `tablet ${tabletId}: undecodable snapshot descriptor`);
    }
    deps.log.info({ tablet: tabletId, source: desc.sourceUuid, index: snap.meta.index }, 'remote bootstrap: installing snapshot');
    deps.setState(TabletState.BOOTSTRAPPING);
    const marker = path.join(deps.dir, BOOTSTRAP_MARKER);
    fs.writeFileSync(marker, JSON.stringify(desc));
    await deps.quiesce();
    await deps.dbs.replace((onChunk) => deps.fetchSnapshot(desc, onChunk));
    await deps.databasesOpened();
    // The writes the source replicated up to the snapshot (those after it are applied here next).
    if (desc.retryable) deps.retryable.restore(parseRetryableImage(desc.retryable));
    if (desc.rowLocks) {
      deps.rowLocks.restore(parseRowLockImage(desc.rowLocks));
      // The log here starts after the snapshot: a restart finds the locks it granted only in this file.
      await saveRowLocks({ dir: deps.dir, retryable: deps.retryable, rowLocks: deps.rowLocks });
    }
    // The schema the source had (never older than the entries the snapshot stands for): an ALTER whose
    // CHANGE_SCHEMA entry was compacted away reaches this replica here. DocDB learns the schema's
    // columns only with it (the new databases may hold columns added after this replica's old schema);
    // without it (an older source), DocDB ignores and deletes no column until the next change.
    if (desc.schema) {
      deps.changeSchema({ type: 'CHANGE_SCHEMA', schemaVersion: desc.schema.schemaVersion, tableName: desc.schema.tableName, schema: parseTableSchema(desc.schema.schema) }, { term: 0, index: snap.meta.index });
      deps.applySchema();
    }
    await deps.events()?.snapshotInstalled?.();
    fs.rmSync(marker, { force: true });
    deps.metrics.snapshotsInstalled++;
    deps.setState(TabletState.RUNNING);
  }
}
