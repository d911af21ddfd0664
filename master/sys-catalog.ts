/**
 * The sys catalog: the catalog state machine (catalog-state.ts) replicated by one Raft group across
 * the masters (group id "sys.catalog"), its log a FileLogStorage under DATA/sys-catalog/. Snapshots
 * are the encoded catalog itself, so log GC needs no data transfer beyond the snapshot message.
 *
 * Peer ids in this group are the masters' RPC addresses (--master_addresses): every master derives
 * the same initial configuration from its flags without a discovery round, and a NOT_THE_LEADER hint
 * is simply the leader's id.
 */
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { NodeId } from '../common/ids';
import type { Logger } from '../common/log';
import { OldestKeys } from '../common/oldest-keys';
import type { Rng } from '../common/rng';
import { bootstrapStorage, FileLogStorage, RaftGroup, RawNode, type Entry, type LeaderChange, type LogStorage, type Message, type RaftGroupStatus, type Snapshot } from '../raft';
import { applyCatalogOp, emptyCatalog } from './catalog-state';
import { decodeCatalog, decodeCatalogOp, encodeCatalog, encodeCatalogOp } from './catalog-codec';
import type { CatalogOp, CatalogState } from './catalog-types';
import { MASTER_RAFT_ELECTION_TIMEOUT_TICKS } from './master-flags';

export const SYS_CATALOG_GROUP_ID = 'sys.catalog';
/** Applied entries beyond the snapshot before the log is compacted to a new catalog snapshot. */
export const SYS_CATALOG_COMPACT_EVERY_ENTRIES = 1000;
/** Outcomes kept for local proposals waiting to read theirs (older ones are dropped first). */
const OUTCOMES_MAX = 10_000;

export interface SysCatalogDeps {
  dataDir: string;
  /** This master's RPC address = its peer id. */
  selfId: string;
  /** Every master's RPC address (the initial voters). */
  peers: string[];
  flags: Flags;
  log: Logger;
  rng: Rng;
  send(msgs: Message[]): void;
  onLeaderChange?(c: LeaderChange): void;
  /** Storage seam (tests); default FileLogStorage under DATA/sys-catalog/wal. */
  openLogStorage?(dir: string): Promise<LogStorage>;
}

export class SysCatalog {
  private catalog: CatalogState = emptyCatalog();
  private appliedIndex = 0;
  private readonly outcomes = new Map<number, DbError | undefined>();
  private readonly oldestOutcome = new OldestKeys(this.outcomes);
  private compacting = false;
  private listeners: Array<(s: CatalogState) => void> = [];

  private constructor(
    private readonly deps: SysCatalogDeps,
    private readonly storage: LogStorage,
    private group: RaftGroup | undefined,
  ) {}

  static async open(deps: SysCatalogDeps): Promise<SysCatalog> {
    const dir = path.join(deps.dataDir, 'sys-catalog', 'wal');
    const storage = deps.openLogStorage ? await deps.openLogStorage(dir) : await FileLogStorage.open(dir, { flags: deps.flags, logger: deps.log });
    if (storage.lastIndex() === 0 && storage.initialState().hardState.term === 0 && !storage.snapshot()) {
      // First start: the same bootstrap entries on every master (peer ids sorted, so equal bytes).
      bootstrapStorage(storage, [...deps.peers].sort().map((p) => NodeId(p)));
      await storage.sync();
      deps.log.info({ peers: deps.peers }, 'sys catalog bootstrapped');
    }
    const sc = new SysCatalog(deps, storage, undefined);
    const snap = storage.snapshot();
    if (snap && snap.data.byteLength > 0) {
      sc.catalog = decodeCatalog(snap.data);
      sc.appliedIndex = snap.meta.index;
    }
    const core = new RawNode({
      id: NodeId(deps.selfId),
      storage,
      applied: sc.appliedIndex,
      electionTicks: deps.flags.get(MASTER_RAFT_ELECTION_TIMEOUT_TICKS),
      heartbeatTicks: 2,
      rng: deps.rng,
    });
    sc.group = new RaftGroup({
      id: NodeId(deps.selfId),
      groupId: SYS_CATALOG_GROUP_ID,
      storage,
      core,
      appliedIndex: sc.appliedIndex,
      send: (msgs) => deps.send(msgs),
      applyEntries: (ents) => sc.applyEntries(ents),
      createSnapshot: (index) => sc.createSnapshot(index),
      installSnapshot: (s) => sc.installSnapshot(s),
      onLeaderChange: (c) => deps.onLeaderChange?.(c),
      log: deps.log,
      onFatal: (e) => {
        // The catalog cannot limp on with a broken log: stop the process (the other masters go on).
        deps.log.fatal({ err: e }, 'sys catalog failed; stopping the master');
        setImmediate(() => process.exit(70));
      },
    });
    return sc;
  }

  private raft(): RaftGroup {
    if (!this.group) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'sys catalog is starting');
    return this.group;
  }

  /** The applied catalog (immutable: every op makes a new state). */
  state(): CatalogState {
    return this.catalog;
  }

  onApplied(l: (s: CatalogState) => void): void {
    this.listeners.push(l);
  }

  tick(): void {
    this.group?.tick();
    this.maybeCompact();
  }

  step(m: Message): void {
    this.group?.step(m);
  }

  isLeaderReady(): boolean {
    return this.group?.isLeaderReady() ?? false;
  }

  isLeader(): boolean {
    return this.group?.isLeader() ?? false;
  }

  /** The leader's id (= RPC address), '' when unknown. */
  leaderId(): string {
    return this.group?.leaderId() ?? '';
  }

  status(): RaftGroupStatus {
    return this.raft().status();
  }

  transferLeadership(to?: string): void {
    this.raft().transferLeadership(to ? NodeId(to) : undefined);
  }

  /** Replicate one op; resolves with the catalog after it, or rejects with the op's refusal. */
  async propose(op: CatalogOp): Promise<CatalogState> {
    const { index } = await this.raft().propose(encodeCatalogOp(op));
    const err = this.outcomes.get(index);
    this.outcomes.delete(index);
    if (err) throw err;
    return this.catalog;
  }

  /** Linearizable read barrier for the leader (nothing committed before the call is missing). */
  readBarrier(): Promise<void> {
    return this.raft().readIndex();
  }

  private applyEntries(ents: readonly Entry[]): Promise<void> {
    for (const e of ents) {
      if (e.index <= this.appliedIndex) continue;
      if (e.type === 'normal' && e.data.byteLength > 0) {
        const r = applyCatalogOp(this.catalog, decodeCatalogOp(e.data));
        this.catalog = r.state;
        this.outcomes.set(e.index, r.error ? new DbError(r.error.code, r.error.message) : undefined);
        if (this.outcomes.size > OUTCOMES_MAX) this.outcomes.delete(this.oldestOutcome.take()!);
      }
      this.appliedIndex = e.index;
    }
    for (const l of this.listeners) l(this.catalog);
    return Promise.resolve();
  }

  private createSnapshot(index: number): Promise<Uint8Array> {
    // Only the current state exists; compaction is asked for exactly the applied index.
    if (index !== this.appliedIndex) return Promise.reject(new DbError(ErrorCode.SERVICE_UNAVAILABLE, `catalog snapshot at ${index} not available (applied ${this.appliedIndex})`));
    return Promise.resolve(encodeCatalog(this.catalog));
  }

  private installSnapshot(s: Snapshot): Promise<void> {
    this.catalog = decodeCatalog(s.data);
    this.appliedIndex = s.meta.index;
    this.deps.log.info({ index: s.meta.index }, 'sys catalog snapshot installed');
    for (const l of this.listeners) l(this.catalog);
    return Promise.resolve();
  }

  private maybeCompact(): void {
    if (this.compacting || !this.group) return;
    if (this.appliedIndex - this.storage.firstIndex() < SYS_CATALOG_COMPACT_EVERY_ENTRIES) return;
    if (this.group.status().appliedIndex !== this.appliedIndex) return;
    this.compacting = true;
    this.group
      .compactLog(this.appliedIndex)
      .catch((e: unknown) => this.deps.log.debug({ err: e }, 'sys catalog compaction skipped'))
      .finally(() => (this.compacting = false));
  }

  async stop(): Promise<void> {
    await this.group?.stop();
    await this.storage.close();
  }
}
