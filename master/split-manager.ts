/**
 * The master's side of tablet splitting (docs/splitting.md): a split is registered in the catalog
 * first (two child ids with their partitions, the parent keeps serving), then the tablet's leader
 * replicates SPLIT (every replica builds the children from its own data), and once both children
 * have leaders the split is completed: they take the parent's place and the parent leaves the
 * catalog (its replicas are deleted through heartbeats). The background round finishes or re-sends
 * whatever a master failover or a lost answer left half-done, and runs automatic splitting.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { bytesOfHex, compareKeyBytes, hexOf } from '../common/key-bounds';
import { newId } from '../common/ids';
import type { Logger } from '../common/log';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { splitMethods, type MasterSplitTabletRequestPB, type MasterSplitTabletResponsePB, type RpcClient, type SplitPointPB } from '../rpc';
import type { CatalogState, Partition, TableInfo, TabletInfo } from './catalog-types';
import { partitionToPb, splitPrefixOf } from './range-partitions';
import {
  ENABLE_AUTOMATIC_TABLET_SPLITTING,
  OUTSTANDING_TABLET_SPLIT_LIMIT,
  TABLET_SPLIT_LIMIT_PER_TABLE,
  TABLET_SPLIT_LOW_PHASE_SHARD_COUNT_PER_NODE,
  TABLET_SPLIT_LOW_PHASE_SIZE_THRESHOLD_BYTES,
  TABLET_SPLIT_SIZE_THRESHOLD_BYTES,
} from './split-flags';
import type { SysCatalog } from './sys-catalog';
import type { TServerRegistry } from './tserver-registry';

/** The leader's SplitTablet (the SPLIT entry replicated and applied there) waits at most this long. */
const SPLIT_RPC_TIMEOUT_MS = 35_000;
/** Each replica's flush before a split waits at most this long (a full memtable: a second or two). */
const SPLIT_FLUSH_TIMEOUT_MS = 20_000;
/** A registered split whose children do not run yet is re-sent to the parent's leader this often. */
const SPLIT_RESEND_MS = 5_000;
/** The admin call waits this long for the children to elect leaders (the round completes it otherwise). */
const SPLIT_COMPLETE_WAIT_MS = 15_000;
/** A tablet found under its threshold once flushed is not flushed for a split again for this long (a few heartbeats). */
const UNDER_THRESHOLD_QUIET_MS = 5_000;
/** Completed splits remembered for the split counter's rate (bounded ring). */
const RECENT_SPLITS_MAX = 1024;

export interface SplitManagerDeps {
  sys: SysCatalog;
  registry: TServerRegistry;
  client: RpcClient;
  log: Logger;
  flags: Flags;
  now(): number;
  timeoutMs(): number;
  addressOf(uuid: string): string | undefined;
  requireLeader(): void;
  liveTServers(): number;
}

export interface SplitPoint {
  hash?: number;
  key?: Uint8Array;
}

function isHashTable(t: TableInfo): boolean {
  return t.schema.hashColumns.length > 0;
}

/** The two children's partitions at `point`, or INVALID_ARGUMENT unless it lies strictly inside. */
export function splitPartitions(table: TableInfo, p: Partition, point: SplitPoint): [Partition, Partition] {
  if (isHashTable(table)) {
    const h = point.hash;
    if (h === undefined || !Number.isInteger(h) || h <= p.start || h >= p.end) throw new DbError(ErrorCode.INVALID_ARGUMENT, `split hash ${String(h)} is not strictly inside the tablet's hash range [${p.start}, ${p.end})`);
    return [{ start: p.start, end: h }, { start: h, end: p.end }];
  }
  const k = point.key ?? new Uint8Array(0);
  const lo = bytesOfHex(p.keyStart);
  const hi = bytesOfHex(p.keyEnd);
  if (k.length === 0 || (lo.length > 0 && compareKeyBytes(k, lo) <= 0) || (hi.length > 0 && compareKeyBytes(k, hi) >= 0)) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `split key ${hexOf(k) || '(empty)'} is not strictly inside the tablet's key range [${p.keyStart || '-inf'}, ${p.keyEnd || '+inf'})`);
  }
  const kh = hexOf(k);
  return [
    { start: p.start, end: p.end, ...(p.keyStart ? { keyStart: p.keyStart } : {}), keyEnd: kh },
    { start: p.start, end: p.end, keyStart: kh, ...(p.keyEnd ? { keyEnd: p.keyEnd } : {}) },
  ];
}

/**
 * A split parent's replicas stay this long after the split completed (YugabyteDB keeps the parent
 * for lagging replicas): a replica that had not applied SPLIT yet builds the children from its own
 * data instead of copying them from a child leader, and stale clients still hear TABLET_SPLIT.
 */
export const SPLIT_PARENT_RETENTION_MS = 30_000;

/** The answer to a split of `parentId` completed within SPLIT_PARENT_RETENTION_MS (undefined: none). */
export function recentSplitOf(c: CatalogState, parentId: string, nowWallMs: number): MasterSplitTabletResponsePB | undefined {
  for (const t of c.tables.values()) {
    const h = (t.splitHistory ?? []).find((r) => r.parentId === parentId && nowWallMs - r.atMs < SPLIT_PARENT_RETENTION_MS);
    if (h) return { children: [...h.children], splitPoint: isHashTable(t) ? { hash: Number(h.at) } : { key: bytesOfHex(h.at) } };
  }
  return undefined;
}

/** Parents of splits completed within SPLIT_PARENT_RETENTION_MS (not deleted from their tservers yet). */
export function recentSplitParents(c: CatalogState, nowWallMs: number): Set<string> {
  const out = new Set<string>();
  for (const t of c.tables.values()) for (const h of t.splitHistory ?? []) if (nowWallMs - h.atMs < SPLIT_PARENT_RETENTION_MS) out.add(h.parentId);
  return out;
}

export class SplitManager {
  /** Splits completed by this master since it started (the split counter metric). */
  splitsCompleted = 0;
  /** Completions under way, by parent (maybeComplete). */
  private readonly completing = new Map<string, Promise<void>>();
  /** Tablets whose automatic split was started here and has not answered yet. */
  private readonly autoInflight = new Set<string>();
  /** Tablets found under their threshold once flushed: left alone until then (their reports catch up). */
  private readonly underThresholdUntil = new Map<string, number>();
  private readonly lastSent = new Map<string, number>();

  constructor(private readonly deps: SplitManagerDeps) {}

  private catalog(): CatalogState {
    return this.deps.sys.state();
  }

  private leaderAddress(tabletId: string): string {
    const leader = this.deps.registry.leaderReport(tabletId, this.deps.now(), this.deps.timeoutMs());
    const addr = leader ? this.deps.addressOf(leader.uuid) : undefined;
    if (!addr) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tabletId} has no known leader yet; try again`);
    return addr;
  }

  /** `tessera admin split_tablet`: split now, at the given point or the middle of the data. */
  async split(req: MasterSplitTabletRequestPB, o: { minBytes?: number } = {}): Promise<MasterSplitTabletResponsePB> {
    this.deps.requireLeader();
    const id = req.tabletId ?? '';
    const c = this.catalog();
    const tablet = c.tablets.get(id);
    if (!tablet) {
      // A copy of a request whose split completed (its answer was lost, the connection dropped
      // before the client knew the request went out): the split it asked for is done.
      const done = recentSplitOf(c, id, Date.now());
      if (done) return done;
      throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${id} not found`);
    }
    const table = c.tables.get(tablet.tableId);
    if (!table || !table.tabletIds.includes(id)) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${id} is not a serving tablet of a table (a child of a split under way?)`);
    if (table.name === TRANSACTIONS_TABLE) throw new DbError(ErrorCode.NOT_SUPPORTED, `tablets of the ${TRANSACTIONS_TABLE} system table are not split`);
    if (tablet.splitChildren) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${id} is already being split into ${tablet.splitChildren.join(', ')}`);
    const given = req.splitKey?.length ? { key: new Uint8Array(req.splitKey) } : req.hasSplitHash ? { hash: req.splitHash ?? 0 } : undefined;
    // Automatic splits decide on the reported memtable + table-file bytes; a memtable's arena
    // overstates its data (several times for small rows), so the size once flushed decides. (Not
    // for manual splits: the binding's flush is a CompactRange, which may rewrite the whole tablet.)
    const bytes = o.minBytes !== undefined ? await this.flushReplicas(tablet) : undefined;
    if (o.minBytes !== undefined && bytes !== undefined && bytes < o.minBytes) {
      throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${id} holds ${bytes} bytes once flushed, under the split threshold ${o.minBytes}`, { underThreshold: true });
    }
    const point = given ?? (await this.middle(tablet, table));
    const parts = splitPartitions(table, tablet.partition, point);
    const children: TabletInfo[] = parts.map((partition) => ({ id: newId(), tableId: table.id, partition, replicas: tablet.replicas.map((r) => ({ ...r })) }));
    await this.deps.sys.propose({ type: 'registerSplit', parentId: id, children, at: point.hash !== undefined ? String(point.hash) : hexOf(point.key) });
    this.deps.log.info({ tablet: id, table: table.name, children: children.map((x) => x.id), at: point.hash ?? hexOf(point.key) }, 'tablet split registered');
    let sendError: unknown;
    try {
      await this.sendSplit(this.catalog().tablets.get(id) ?? tablet);
    } catch (e) {
      // Refused before anything was replicated (TRY_AGAIN: transactions with intents; a bad point):
      // forget the children. Other failures (an answer lost, a leader that answered while it
      // stepped down) may hide a split that happened: the wait below tells, and the background
      // round finishes it otherwise. (Thrown at once, a retryable code made the client send the
      // split again, which then found the parent gone: TABLET_NOT_FOUND.)
      if (e instanceof DbError && (e.code === ErrorCode.TRY_AGAIN || e.code === ErrorCode.INVALID_ARGUMENT || e.code === ErrorCode.NOT_SUPPORTED)) {
        await this.deps.sys.propose({ type: 'abortSplit', parentId: id }).catch(() => undefined);
        throw e;
      }
      sendError = e;
    }
    const deadline = this.deps.now() + SPLIT_COMPLETE_WAIT_MS;
    while (this.deps.now() < deadline && this.catalog().tablets.has(id)) {
      await this.maybeComplete(id);
      if (this.catalog().tablets.has(id)) await new Promise((r) => setTimeout(r, 50));
    }
    if (sendError !== undefined && this.catalog().tablets.has(id)) throw sendError;
    const pb: SplitPointPB = point.hash !== undefined ? { hash: point.hash } : { key: point.key ?? new Uint8Array(0) };
    return { children: children.map((x) => x.id), splitPoint: pb };
  }

  /**
   * Every replica flushes the tablet's memtable (while it still takes writes): the size once flushed
   * (largest answer; undefined when none answered), and the split point is then found on table-file
   * size estimates. Best effort: a replica that does not answer is not waited for beyond the timeout.
   */
  private async flushReplicas(tablet: TabletInfo): Promise<number | undefined> {
    const t0 = this.deps.now();
    const calls = tablet.replicas.map((r) => {
      const addr = this.deps.addressOf(r.tserverUuid);
      return addr ? this.deps.client.call(addr, splitMethods().tabletSplit, { tabletId: tablet.id, flushOnly: true }, { timeoutMs: SPLIT_FLUSH_TIMEOUT_MS }) : Promise.reject(new Error('no address'));
    });
    const answers = await Promise.allSettled(calls);
    const sizes = answers.flatMap((a) => (a.status === 'fulfilled' && a.value.dataBytes !== undefined ? [Number(a.value.dataBytes)] : []));
    const bytes = sizes.length > 0 ? Math.max(...sizes) : undefined;
    this.deps.log.info({ tablet: tablet.id, ms: Math.round(this.deps.now() - t0), failed: answers.length - sizes.length, bytes }, 'split: replicas flushed their memtables');
    return bytes;
  }

  /** The middle of the tablet's data, as its leader finds it. */
  private async middle(tablet: TabletInfo, table: TableInfo): Promise<SplitPoint> {
    const r = await this.deps.client.call(this.leaderAddress(tablet.id), splitMethods().tabletSplit, { tabletId: tablet.id, splitPrefix: splitPrefixOf(table.splitPolicy) }, { timeoutMs: SPLIT_RPC_TIMEOUT_MS });
    return isHashTable(table) ? { hash: r.splitPoint?.hash ?? 0 } : { key: new Uint8Array(r.splitPoint?.key ?? []) };
  }

  private async sendSplit(parent: TabletInfo): Promise<void> {
    const c = this.catalog();
    const children = (parent.splitChildren ?? []).map((cid) => c.tablets.get(cid)).filter((t): t is TabletInfo => t !== undefined);
    if (children.length !== 2) return;
    this.lastSent.set(parent.id, this.deps.now());
    const peers = parent.replicas.map((r) => ({ uuid: r.tserverUuid, rpcAddress: this.deps.addressOf(r.tserverUuid) ?? '', memberType: r.memberType }));
    await this.deps.client.call(
      this.leaderAddress(parent.id),
      splitMethods().tabletSplit,
      { tabletId: parent.id, children: children.map((t) => ({ tabletId: t.id, partition: partitionToPb(t.partition) })), peers },
      { timeoutMs: SPLIT_RPC_TIMEOUT_MS },
    );
  }

  /**
   * Both children lead somewhere and have committed an entry past their base (index 1): a majority
   * of their replicas built them from SPLIT. Only then may the catalog round create a missing replica
   * empty — a child's first term is led without an election (docs/splitting.md), and empty replicas
   * of a minority cannot win it.
   */
  /**
   * Complete the split of `parentId` once both children serve. One completion at a time per parent:
   * split()'s wait and the background round() both call this, and a second completeSplit proposed
   * for a parent the first already removed was refused (TABLET_NOT_FOUND) and reached the caller of
   * split() as its error, though the split had succeeded.
   */
  private maybeComplete(parentId: string): Promise<void> {
    const running = this.completing.get(parentId);
    if (running) return running;
    const run = this.completeOnce(parentId).finally(() => this.completing.delete(parentId));
    this.completing.set(parentId, run);
    return run;
  }

  private async completeOnce(parentId: string): Promise<void> {
    const parent = this.catalog().tablets.get(parentId);
    if (!parent?.splitChildren) return;
    const now = this.deps.now();
    const serving = (cid: string): boolean => (this.deps.registry.leaderReport(cid, now, this.deps.timeoutMs())?.report.commitIndex ?? 0n) > 1n;
    if (!parent.splitChildren.every(serving)) return;
    try {
      await this.deps.sys.propose({ type: 'completeSplit', parentId, atMs: Date.now() });
    } catch (e) {
      // Completed meanwhile another way (a master that took over, say): the split is done.
      if (!this.catalog().tablets.has(parentId)) return;
      throw e;
    }
    if (!this.catalog().tablets.has(parentId)) {
      this.splitsCompleted++;
      this.lastSent.delete(parentId);
      this.deps.log.info({ tablet: parentId, children: parent.splitChildren }, 'tablet split completed: the children serve');
    }
  }

  /** Background round: finish registered splits, then start automatic ones. */
  async round(): Promise<void> {
    const c = this.catalog();
    const pending = [...c.tablets.values()].filter((t) => t.splitChildren);
    for (const parent of pending) {
      await this.maybeComplete(parent.id).catch((err: unknown) => this.deps.log.debug({ err, tablet: parent.id }, 'completing a split failed; next round'));
      if (!this.catalog().tablets.get(parent.id)?.splitChildren) continue;
      if (this.deps.now() - (this.lastSent.get(parent.id) ?? -Infinity) < SPLIT_RESEND_MS) continue;
      void this.sendSplit(parent).catch((err: unknown) => this.deps.log.debug({ err, tablet: parent.id }, 'SplitTablet to the leader failed; re-sent next round'));
    }
    // Registered splits and automatic ones still choosing their point (not registered yet) count alike.
    const outstanding = pending.length + [...this.autoInflight].filter((id) => !c.tablets.get(id)?.splitChildren).length;
    const room = this.deps.flags.get(OUTSTANDING_TABLET_SPLIT_LIMIT) - outstanding;
    if (this.deps.flags.get(ENABLE_AUTOMATIC_TABLET_SPLITTING) && room > 0) this.autoSplit(c, room);
    if (this.lastSent.size > RECENT_SPLITS_MAX) this.lastSent.clear();
    for (const [id, until] of this.underThresholdUntil) if (until < this.deps.now()) this.underThresholdUntil.delete(id);
  }

  /** Tablets over their phase's threshold, largest first: up to `room` of them split at once (each at the middle of its data). */
  private autoSplit(c: CatalogState, room: number): void {
    const now = this.deps.now();
    const live = Math.max(1, this.deps.liveTServers());
    const over: Array<{ tablet: TabletInfo; bytes: number; threshold: number }> = [];
    for (const table of c.tables.values()) {
      if (table.name === TRANSACTIONS_TABLE) continue;
      const low = table.tabletIds.length < this.deps.flags.get(TABLET_SPLIT_LOW_PHASE_SHARD_COUNT_PER_NODE) * live;
      const threshold = this.deps.flags.get(low ? TABLET_SPLIT_LOW_PHASE_SIZE_THRESHOLD_BYTES : TABLET_SPLIT_SIZE_THRESHOLD_BYTES);
      // The per-table limit counts the splits under way too (each adds one tablet).
      let left = this.deps.flags.get(TABLET_SPLIT_LIMIT_PER_TABLE) - table.tabletIds.length - table.tabletIds.filter((id) => c.tablets.get(id)?.splitChildren).length;
      const mine: typeof over = [];
      for (const id of table.tabletIds) {
        const t = c.tablets.get(id);
        if (!t || t.splitChildren || this.autoInflight.has(id) || (this.underThresholdUntil.get(id) ?? 0) > now) continue;
        const r = this.deps.registry.leaderReport(id, now, this.deps.timeoutMs())?.report;
        const bytes = Number(r?.regularMemtableBytes ?? 0n) + Number(r?.regularSstBytes ?? 0n);
        if (bytes > threshold) mine.push({ tablet: t, bytes, threshold });
      }
      for (const x of mine.sort((a, b) => b.bytes - a.bytes)) if (left-- > 0) over.push(x);
    }
    for (const x of over.sort((a, b) => b.bytes - a.bytes).slice(0, room)) this.startAutoSplit(x.tablet, x.bytes, x.threshold);
  }

  private startAutoSplit(tablet: TabletInfo, bytes: number, threshold: number): void {
    this.deps.log.info({ tablet: tablet.id, bytes, threshold }, 'automatic split: tablet over its size threshold');
    // Not awaited: the split waits for its children, the catalog round must not.
    this.autoInflight.add(tablet.id);
    void this.split({ tabletId: tablet.id }, { minBytes: threshold })
      .catch((err: unknown) => {
        // Under the threshold once flushed: not asked again until the heartbeats report the flushed size.
        if (err instanceof DbError && err.details['underThreshold']) this.underThresholdUntil.set(tablet.id, this.deps.now() + UNDER_THRESHOLD_QUIET_MS);
        this.deps.log.info({ err, tablet: tablet.id }, 'automatic split not done; tried again later');
      })
      .finally(() => this.autoInflight.delete(tablet.id));
  }
}
