/**
 * Building a split's children on one replica (docs/splitting.md, "How a split happens"): their
 * RegularDBs made from the parent's before they open (one checkpoint with hard links, cloned for
 * each, or a copy of the rows), their logs based at index 1, both built at once; then each opens,
 * and the replica the SPLIT entry names leads the children's first term without an election.
 *
 * The first term: every replica that builds a child writes the hard state {term: SPLIT_CHILD_TERM,
 * vote: the named leader} durably before the child's meta.json, so no replica can vote for anyone
 * else in that term, and the named replica leads it as soon as its freshly built child opens
 * (Raft.leadAssignedTerm) — no pre-vote, no vote round, no wait for a second replica's copy. Only a
 * fresh build leads at once: a child reopened after a restart (it may have led that term and sent
 * entries it did not persist) elects as usual, at a later term. It still needs a majority to commit
 * its no-op, so it is ready (and the master completes the split) only once a follower's copy exists.
 * Raft messages that reach this server for a child still being built are kept (bounded) and
 * delivered when it opens, so the leader's first append is not lost to a follower building slower.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Flags } from '../common/flags';
import { NodeId } from '../common/ids';
import type { Logger } from '../common/log';
import { makeDirs } from '../common/fs-dirs';
import { cloneCheckpoint, RangeHidingEngine, RocksDbEngine, walOpGroups, WalFormatError, type KvEngine, type KvOp, type WalAside } from '../docdb';
import { BOOTSTRAP_TERM, DEFAULT_WAL_DURABILITY, type LogStorage, type Message, type WalDurability } from '../raft';
import { copyRows, rowRangeOf, type ChildBuilt } from './split-apply';
import { RAFT_ELECTION_TIMEOUT_TICKS, SPLIT_HARD_LINKS } from './tserver-flags';
import { writeTabletMeta, type TabletMeta } from './tablet/tablet-meta';
import { TabletState, type SnapshotDescriptor, type TabletPeer } from './tablet/tablet-peer';

/** A split's checkpoint of its parent, under the tablets directory while the children are made from it. */
export const SPLIT_SCRATCH_PREFIX = '.split-checkpoint-';
/** The log index a split child's databases stand for (its log starts after it). */
export const SPLIT_CHILD_BASE_INDEX = 1;
/** The children's first term, led by the SPLIT entry's named replica: above BOOTSTRAP_TERM (raft-state.ts: a replica at a higher term may have acked a leader, so it honours the startup lease). */
export const SPLIT_CHILD_TERM = BOOTSTRAP_TERM + 1;
/** Raft messages kept per child while it is built (more are dropped: Raft resends). */
const BUILDING_MESSAGES_MAX = 256;
/** How often the parent's leader looks whether the split children have elected. */
const CHILD_LEADER_POLL_MS = 5;
/**
 * Entries without a named leader (written before it existed): the child on the parent leader's
 * server campaigns again this often while it has no leader — not shorter than a pre-vote and a vote
 * round trip on a busy server.
 */
const CHILD_CAMPAIGN_EVERY_TICKS = 6;
const DATA_START = Uint8Array.of(0x20);

function syncFile(file: string): void {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // flushed and deleted: its rows are in a synced table file
    throw e;
  }
  try {
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The parent's memtable, read from the WAL set aside by the checkpoint, written into the children:
 * each only its own rows (unsynced: the caller syncs), in the order they were written. Rows per child.
 */
async function carryMemtable(engines: KvEngine[], wal: WalAside, metas: TabletMeta[]): Promise<number[]> {
  const ranges = metas.map((m) => {
    const r = rowRangeOf(m);
    return { from: Buffer.compare(r.start, DATA_START) > 0 ? r.start : DATA_START, end: r.end };
  });
  const rows = metas.map(() => 0);
  for await (const group of walOpGroups(wal.files)) {
    const parts = ranges.map((r) => group.filter((op) => Buffer.compare(op.key, r.from) >= 0 && (r.end.length === 0 || Buffer.compare(op.key, r.end) < 0)));
    // Each group's bytes are the reader's to reuse once these writes are done.
    await Promise.all(engines.map((e, i) => (parts[i]!.length > 0 ? e.write(parts[i]!) : undefined)));
    parts.forEach((p, i) => (rows[i]! += p.length));
  }
  return rows;
}

/** A child's databases opened by its build, by directory name (`regular`, `intents`). */
export interface OpenEngines {
  regular?: KvEngine | undefined;
  intents?: KvEngine | undefined;
}

export interface SplitChildrenDeps {
  tabletsDir: string;
  selfUuid: string;
  selfAddress: string;
  flags: Flags;
  log: Logger;
  openEngine(dir: string): Promise<KvEngine>;
  openWal(dir: string, durability: WalDurability): Promise<LogStorage>;
  /** Open a child; `engines`: its databases open already, which the tablet takes over (and closes also when its open fails). */
  openPeer(meta: TabletMeta, engines?: OpenEngines): Promise<TabletPeer>;
  peer(tabletId: string): TabletPeer | undefined;
  addressOf(uuid: string): string | undefined;
}


/** The RocksDB engine behind a RegularDB view, when it can take a checkpoint. */
function checkpointSource(e: KvEngine): RocksDbEngine | undefined {
  if (e instanceof RocksDbEngine) return e;
  return e instanceof RangeHidingEngine ? checkpointSource(e.inner) : undefined;
}

export class SplitChildren {
  /** Children being built here: the Raft messages that arrived for them meanwhile. */
  private readonly building = new Map<string, Message[]>();

  constructor(private readonly deps: SplitChildrenDeps) {}

  /** A message for a tablet not hosted here: kept when it is a child being built (true), else false. */
  keep(tabletId: string, m: Message): boolean {
    const q = this.building.get(tabletId);
    if (!q) return false;
    if (q.length < BUILDING_MESSAGES_MAX) q.push(m);
    return true;
  }

  /**
   * Build and open the children (meta.json written last, so a crash midway leaves a directory the
   * next attempt wipes). `leader`: the SPLIT entry's named leader (absent: the children elect;
   * `campaign` then makes them campaign at once here).
   */
  async create(metas: TabletMeta[], parentRegular: KvEngine, o: { leader?: string; campaign: boolean }): Promise<ChildBuilt[]> {
    if (metas.length === 0) return [];
    for (const m of metas) this.building.set(m.tabletId, []);
    const source = checkpointSource(parentRegular);
    // Not a tablet directory (no meta.json): openAll removes one a crash left behind.
    const scratch = path.join(this.deps.tabletsDir, `${SPLIT_SCRATCH_PREFIX}${metas[0]!.tabletId}`);
    const walDir = `${scratch}.wal`;
    // The children's logs do not depend on the data: written while the checkpoint is taken and opened.
    // (Each child's directory is wiped and made again synchronously, before their first await.)
    const logs = metas.map((m) => this.prepareChild(m, o.leader));
    // Their IntentsDBs start empty: opened now (queued on the libuv thread ahead of the checkpoint's open).
    const intentsOpens = metas.map((m) => this.deps.openEngine(path.join(this.deps.tabletsDir, m.tabletId, 'intents')));
    for (const p of [...logs, ...intentsOpens]) p.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    let linked: Array<KvEngine | undefined> = [];
    let intents: Array<Promise<KvEngine> | undefined> = intentsOpens;
    try {
      const t0 = performance.now();
      // The parent's writes are held only while the checkpoint is taken: its WAL is set aside (linked, with its size then).
      const cp = source && this.deps.flags.get(SPLIT_HARD_LINKS) ? await source.checkpointWalAside(scratch, walDir) : undefined;
      if (cp) linked = await this.openLinked(scratch, cp.wal, metas);
      const shared = { checkpointMs: cp?.checkpointMs ?? 0, recoverMs: Math.round(performance.now() - t0) - (cp?.checkpointMs ?? 0) };
      if (source && !cp) this.deps.log.warn({ attempts: 'all' }, 'split: no consistent checkpoint of the parent (RocksDB kept changing its files); copying rows');
      const prepared = await Promise.all(logs);
      // Both children at once: their log writes and opens overlap (RocksDB calls queue on the libuv pool).
      const handed = { regular: linked, intents: await Promise.all(intentsOpens) };
      linked = []; // from here each child's tablet owns its engines (closed with it, also if its open fails)
      intents = [];
      const built = await Promise.all(metas.map((m, i) => this.createChild(m, parentRegular, { regular: handed.regular[i], intents: handed.intents[i]! }, o, prepared[i]!)));
      return built.map((b) => ({ ...b, ...shared }));
    } finally {
      await Promise.allSettled(logs);
      // Engines not handed to a child (a failure on the way): closed, so the next attempt can open the directories again.
      for (const e of linked) await e?.close().catch(() => undefined);
      for (const p of intents) await p?.then((e) => e.close()).catch(() => undefined);
      for (const d of [scratch, walDir]) fs.rmSync(d, { recursive: true, force: true });
      for (const m of metas) this.building.delete(m.tabletId);
    }
  }

  /**
   * The children's RegularDBs made from the checkpoint, left open for the children to take over.
   * The checkpoint (the parent's table files, linked) becomes the first child's RegularDB (a rename)
   * and is cloned for the second before either opens; neither has a WAL to replay. The parent's
   * memtable is read from its WAL, set aside by the checkpoint (docdb/rocksdb-wal.ts), and each
   * child writes only its own rows of it into its own memtable (unsynced, then one synced write
   * deletes the parent's meta keys), so the child's databases start at op id 0, matching its empty log.
   * Before, RocksDB replayed the WAL when the checkpoint opened and wrote all of it (both halves) to
   * one more L0 table file: that pushed a child's L0 over `max_bytes_for_level_base`, and every
   * replica compacted the whole parent right after the split (docs/splitting.md, "What the seconds
   * after a split cost"). A WAL that cannot be read that way is copied into the checkpoint instead,
   * and RocksDB replays it in each child as before.
   */
  private async openLinked(scratch: string, wal: WalAside, metas: TabletMeta[]): Promise<KvEngine[]> {
    const t0 = performance.now();
    const dirs = metas.map((m) => path.join(this.deps.tabletsDir, m.tabletId, 'regular'));
    const readable = await this.walReadable(scratch, wal);
    fs.renameSync(scratch, dirs[0]!);
    for (const d of dirs.slice(1)) cloneCheckpoint(dirs[0]!, d);
    const opened = await Promise.allSettled(dirs.map((d) => this.deps.openEngine(d)));
    const out = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    try {
      for (const o of opened) if (o.status === 'rejected') throw o.reason;
      const rows = readable ? await carryMemtable(out, wal, metas) : 'replayed by RocksDB';
      const dropMeta: KvOp = { type: 'delRange', start: Uint8Array.of(0x00), end: DATA_START };
      await Promise.all(out.map((e) => e.write([dropMeta], { sync: true })));
      // The memtable rows went in unsynced; the synced write above made the child's current WAL
      // durable, and a WAL RocksDB switched away from meanwhile is synced here.
      for (const d of dirs) for (const n of fs.readdirSync(d)) if (n.endsWith('.log')) syncFile(path.join(d, n));
      this.deps.log.info({ tablet: metas[0]!.tabletId, walFiles: wal.files.length, memtableRows: rows, ms: Math.round(performance.now() - t0) }, "split: children's RegularDBs made");
      return out;
    } catch (e) {
      for (const x of out) await x.close().catch(() => undefined);
      throw e;
    }
  }

  /**
   * Whether the WAL set aside by the checkpoint can be carried by tessera: it holds only what the
   * reader knows, and every memtable entry. If not, its first bytes are copied into the checkpoint,
   * for RocksDB to replay in each child.
   */
  private async walReadable(scratch: string, wal: WalAside): Promise<boolean> {
    try {
      let entries = 0;
      for await (const group of walOpGroups(wal.files)) entries += group.length;
      if (entries !== wal.memtableEntries) throw new WalFormatError(`the WAL holds ${entries} entries, the memtables ${wal.memtableEntries}`);
      return true;
    } catch (e) {
      if (!(e instanceof WalFormatError)) throw e;
      this.deps.log.warn({ err: e, walFiles: wal.files.length }, "split: the parent's WAL could not be read; RocksDB replays it in each child");
      for (const f of wal.files) {
        const to = path.join(scratch, path.basename(f.path));
        fs.copyFileSync(f.path, to);
        fs.truncateSync(to, f.size);
      }
      return false;
    }
  }

  /** The child's directory afresh and its log (based at index 1, the first term's vote): what its data does not change. */
  private async prepareChild(meta: TabletMeta, named: string | undefined): Promise<{ leader: string | undefined; walMs: number }> {
    const t0 = performance.now();
    const dir = path.join(this.deps.tabletsDir, meta.tabletId);
    fs.rmSync(dir, { recursive: true, force: true });
    makeDirs(dir);
    const leader = named && meta.peers.some((p) => p.uuid === named && p.memberType === 'VOTER') ? named : undefined;
    await this.baseChildLog(dir, meta, leader);
    return { leader, walMs: Math.round(performance.now() - t0) };
  }

  private async createChild(meta: TabletMeta, parentRegular: KvEngine, engines: { regular: KvEngine | undefined; intents: KvEngine }, o: { campaign: boolean }, prepared: { leader: string | undefined; walMs: number }): Promise<Omit<ChildBuilt, 'checkpointMs' | 'recoverMs'>> {
    const t0 = performance.now();
    const linked = engines.regular;
    const dir = path.join(this.deps.tabletsDir, meta.tabletId);
    const { leader, walMs } = prepared;
    let rows = 0;
    if (!linked) {
      try {
        const regular = await this.deps.openEngine(path.join(dir, 'regular'));
        try {
          rows = await copyRows(parentRegular, regular, rowRangeOf(meta));
        } finally {
          await regular.close();
        }
      } catch (e) {
        await engines.intents.close().catch(() => undefined);
        throw e;
      }
    }
    const childMeta: TabletMeta = linked ? { ...meta, splitLinked: true } : meta;
    writeTabletMeta(dir, childMeta);
    const t1 = performance.now();
    // Its IntentsDB, and a linked child's RegularDB (openLinked), are open already: its tablet takes them over.
    const child = await this.deps.openPeer(childMeta, engines);
    const t2 = performance.now();
    // Fresh from this build: it cannot have led the first term before (the directory was wiped).
    const led = leader === this.deps.selfUuid && child.raftGroup().leadAssignedTerm();
    for (const m of this.building.get(meta.tabletId)?.splice(0) ?? []) child.step(m);
    // Without a named leader the child would wait a whole election timeout while the parent refuses
    // writes: campaign every CHILD_CAMPAIGN_EVERY_TICKS for two election timeouts.
    if (!leader && o.campaign) child.campaignSoon({ forTicks: 2 * this.deps.flags.get(RAFT_ELECTION_TIMEOUT_TICKS), everyTicks: CHILD_CAMPAIGN_EVERY_TICKS });
    return { linked: linked !== undefined, rows, cloneMs: Math.round(t1 - t0), walMs, openMs: Math.round(t2 - t1), led };
  }

  /**
   * A split child's log starts from a snapshot at index 1: its databases are that snapshot. A replica
   * created empty later (the master's CreateTablet, a replica that missed the split) is behind the
   * log's first index, so it gets the child's data by remote bootstrap, never by replaying entries.
   * With a named leader the hard state holds this replica's vote for it in SPLIT_CHILD_TERM, synced
   * with the log (before meta.json makes the child exist).
   */
  private async baseChildLog(dir: string, meta: TabletMeta, leader: string | undefined): Promise<void> {
    const wal = await this.deps.openWal(path.join(dir, 'wal'), meta.durability ?? DEFAULT_WAL_DURABILITY);
    try {
      const conf = { voters: meta.peers.filter((p) => p.memberType === 'VOTER').map((p) => NodeId(p.uuid)), learners: meta.peers.filter((p) => p.memberType === 'LEARNER').map((p) => NodeId(p.uuid)) };
      const desc: SnapshotDescriptor = { tabletId: meta.tabletId, sourceUuid: this.deps.selfUuid, index: SPLIT_CHILD_BASE_INDEX, schema: { schemaVersion: meta.schemaVersion, tableName: meta.tableName, schema: meta.schema } };
      wal.setConfState(conf);
      wal.applySnapshot({ meta: { index: SPLIT_CHILD_BASE_INDEX, term: BOOTSTRAP_TERM, conf }, data: new TextEncoder().encode(JSON.stringify(desc)) });
      if (leader) wal.setHardState({ term: SPLIT_CHILD_TERM, vote: NodeId(leader), commit: SPLIT_CHILD_BASE_INDEX });
      await wal.sync();
    } finally {
      await wal.close();
    }
  }

  /** The addresses of split children's leaders here: a ready leader on this server, or the one a replica follows (polled, until `untilMs`). */
  async leaders(ids: readonly string[], untilMs: number): Promise<Record<string, string>> {
    const found: Record<string, string> = {};
    for (;;) {
      for (const id of ids) {
        const child = this.deps.peer(id);
        if (!child || found[id] || child.state !== TabletState.RUNNING) continue;
        const uuid = child.raftGroup().leaderId();
        const addr = child.isLeaderReady() ? this.deps.selfAddress : uuid && uuid !== this.deps.selfUuid ? this.deps.addressOf(uuid) : undefined;
        if (addr) found[id] = addr;
      }
      if (ids.every((id) => found[id] || !this.deps.peer(id)) || performance.now() >= untilMs) return found;
      await new Promise((r) => setTimeout(r, CHILD_LEADER_POLL_MS));
    }
  }
}
