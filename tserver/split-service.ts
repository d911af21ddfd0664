/**
 * The tablet leader's SplitTablet (rpc/protos/split.proto, docs/splitting.md), called by the master:
 * without children it finds the split point in the tablet's data; with them it replicates the SPLIT
 * entry and answers once this replica applied it (every replica then built the children itself).
 */
import { DbError, ErrorCode } from '../common/errors';
import { hexOf } from '../common/key-bounds';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import type { RpcServer, SplitMethods, TabletSplitRequestPB, TabletSplitResponsePB } from '../rpc';
import { findSplitPoint } from './split-apply';
import type { TabletManager } from './tablet-manager';
import type { SplitChildMeta } from './tablet/tablet-meta';
import type { Logger } from '../common/log';
import { parseTabletMeta } from './tablet/tablet-meta';

/** How long the leader waits for SPLIT to be applied here before answering TIMED_OUT (the master retries). */
const SPLIT_APPLY_TIMEOUT_MS = 30_000;

/** How long a split holds new transactions back while those with intents on the tablet finish. */
const SPLIT_DRAIN_MS = 3_000;
const DRAIN_POLL_MS = 10;

export interface SplitServiceDeps {
  manager(): TabletManager;
  /** Where the time of a split-point search is logged (absent: not logged). */
  log?: Logger;
}

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

export class SplitService {
  constructor(private readonly deps: SplitServiceDeps) {}

  register(server: RpcServer, m: SplitMethods): void {
    server.handle(m.tabletSplit, (r) => this.split(r));
  }

  async split(req: TabletSplitRequestPB): Promise<TabletSplitResponsePB> {
    const peer = this.deps.manager().get(req.tabletId ?? '');
    const meta = peer.meta;
    if (meta.tableName === TRANSACTIONS_TABLE) throw new DbError(ErrorCode.NOT_SUPPORTED, `tablet ${meta.tabletId} belongs to the ${TRANSACTIONS_TABLE} system table, which is not split`);
    if (req.flushOnly) return this.flush(peer);
    const wanted = (req.children ?? []).map((c): SplitChildMeta => ({
      tabletId: c.tabletId ?? '',
      partition: { start: c.partition?.start ?? 0, end: c.partition?.end || 65536, keyStart: hexOf(c.partition?.keyStart), keyEnd: hexOf(c.partition?.keyEnd) },
    }));
    if (meta.splitInto) {
      // A resent request (the first answer was lost): the same split is done; another one cannot be.
      if (wanted.length === 0 || wanted.every((w, i) => w.tabletId === meta.splitInto![i]?.tabletId)) return {};
      throw invalid(`tablet ${meta.tabletId} was already split into ${meta.splitInto.map((c) => c.tabletId).join(', ')}`);
    }
    peer.checkLeader();
    if (wanted.length === 0) {
      const t0 = performance.now();
      const p = await findSplitPoint(peer.engines().regular, meta, req.splitPrefix ?? 0);
      this.deps.log?.info({ tablet: meta.tabletId, ms: Math.round(performance.now() - t0) }, 'split point found');
      return { splitPoint: { hash: p.hash ?? 0, key: p.key ?? new Uint8Array(0) } };
    }
    if (wanted.length !== 2) throw invalid('a split has two children');
    // Checked like meta.json (ids, partitions); the peers are the catalog's replicas.
    const peers = parseTabletMeta({ ...meta, peers: (req.peers ?? []).map((p) => ({ uuid: p.uuid, rpcAddress: p.rpcAddress, memberType: p.memberType || 'VOTER' })) }).peers;
    for (const w of wanted) parseTabletMeta({ ...meta, tabletId: w.tabletId, partition: w.partition });
    // Transactions with intents here finish first (new ones are held back meanwhile, bounded):
    // a split never carries intents into the children.
    const t0 = performance.now();
    const drainUntil = t0 + SPLIT_DRAIN_MS;
    peer.holdNewTransactions(drainUntil);
    try {
      while (peer.txnsWithIntentsCount() > 0 && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      if (peer.txnsWithIntentsCount() > 0) {
        throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${meta.tabletId} still has ${peer.txnsWithIntentsCount()} transaction(s) with intents after ${SPLIT_DRAIN_MS} ms; the split waits for them`);
      }
      peer.checkLeader();
      // Synchronously from the check on: nothing can write intents between it and the proposal.
      // This replica, the proposer, leads the children's first term without an election (split-children.ts).
      const leader = peer.raftGroup().leaderId();
      await peer.proposeOp({ type: 'SPLIT', children: wanted, peers, ...(leader ? { leader } : {}) }, SPLIT_APPLY_TIMEOUT_MS, () => {
        peer.markSplitPending();
        // The split gate holds every write from here, transactional ones too (then TABLET_SPLIT): the drain's TRY_AGAIN ends.
        peer.holdNewTransactions(0);
        // From here writes are held (tablet-split.ts): the time to the 'tablet split' line is the hold.
        this.deps.log?.info({ tablet: meta.tabletId, drainMs: Math.round(performance.now() - t0) }, 'split: SPLIT proposed');
      });
    } finally {
      peer.holdNewTransactions(0);
    }
    if (!peer.meta.splitInto) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${meta.tabletId}: a transaction wrote intents before the SPLIT entry; the split was not carried out`);
    return {};
  }

  /**
   * This replica's RegularDB memtable to table files, and its data bytes then (the master asks
   * every replica before an automatic split: a memtable's arena overstates its data several times
   * for small rows, and the split point is then found on table-file size estimates). Any replica,
   * leader or not; a split parent has nothing left to do.
   */
  private async flush(peer: ReturnType<TabletManager['get']>): Promise<TabletSplitResponsePB> {
    if (peer.meta.splitInto) return { dataBytes: 0n };
    const t0 = performance.now();
    const regular = peer.engines().regular;
    const before = (await regular.stats()).memtableBytes;
    await regular.flush();
    // A linked child's view counts only its own range (docs/splitting.md): the parent's rows it
    // still holds on disk until its clean-up are not its size.
    const s = await regular.stats();
    const dataBytes = s.sstBytes + s.memtableBytes;
    this.deps.log?.info({ tablet: peer.meta.tabletId, memtableBytes: before, dataBytes, ms: Math.round(performance.now() - t0) }, 'split: memtable flushed before the split');
    return { dataBytes: BigInt(dataBytes) };
  }
}
