/** The tserver console's tablet pages: /tablets, /tablet?id=, /tablet-checksum and /size-history. */
import type { BackgroundWork } from '../docdb';
import { DbError, ErrorCode } from '../common/errors';
import { LOGICAL_BITS, type HybridTime } from '../common/hybrid-time';
import { bytesCell, escapeHtml, htmlTable, link, raw, type WebRequest } from '../rpc';
import type { WalSyncTimes } from './tablet/tablet-peer';
import { WAL_SLOW_SYNC_MS } from '../raft';
import { detailOf, type TabletDetail } from './tablet-detail';
import type { TServerWebDeps } from './tserver-web-deps';

function hex4(n: number): string {
  return `0x${n.toString(16).padStart(4, '0')}`;
}

function partitionText(p: { start: number; end: number; keyStart?: string; keyEnd?: string }): string {
  // Range tables: the encoded key bounds (docs/splitting.md).
  if (p.keyStart || p.keyEnd) return `key [${p.keyStart || '-inf'}, ${p.keyEnd || '+inf'})`;
  return `[${hex4(p.start)}, ${hex4(p.end)})`;
}

/**
 * The `read_ht` of /tablet-checksum: a hybrid time as a decimal integer, `now` (this server's hybrid
 * time) or `now-MS` (that many milliseconds before it: replicas a little behind have applied everything
 * up to there, so a live cluster's replicas compare too).
 */
export function parseReadHt(at: string, now: () => HybridTime): HybridTime {
  const rel = /^now(?:-([0-9]{1,9}))?$/.exec(at);
  if (rel) {
    const t = now() - (BigInt(rel[1] ?? '0') * 1000n << LOGICAL_BITS);
    if (t <= 0n) throw new DbError(ErrorCode.INVALID_ARGUMENT, `read_ht ${at} is before the epoch`);
    return t;
  }
  if (!/^[0-9]{1,20}$/.test(at) || BigInt(at) >= 1n << 64n) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `read_ht must be a hybrid time as a decimal integer (physical microseconds << 12 | logical), 'now' or 'now-MS', got '${at}'`);
  }
  return BigInt(at);
}

/** Peers by host:port (this server's own address for itself; '' for a uuid not known here). */
function addressOfPeer(d: TServerWebDeps): (uuid: string) => string {
  return (uuid) => (uuid === '' ? '' : uuid === d.uuid ? d.rpcAddress : (d.manager().addressOf(uuid) ?? ''));
}

/** The tablet pages; each reads the tablets afresh. */
export function registerTabletPages(d: TServerWebDeps): void {
  registerTabletsPage(d);
  registerSizeHistoryPage(d);
  registerTabletPage(d);
  registerChecksumPage(d);
}

function registerTabletsPage(d: TServerWebDeps): void {
  const addressOf = addressOfPeer(d);
  const { web } = d;
  const tabletsWithAddresses = async () => {
    const { tablets } = await d.tabletsJson();
    return { nodeName: d.nodeName ?? '', rpcAddress: d.rpcAddress, tablets: tablets.map((t) => ({ ...t, leaderAddress: addressOf(t.leaderUuid) })) };
  };
  web.route('/tablets', {
    title: 'Tablets',
    nav: 'Tablets',
    json: tabletsWithAddresses,
    html: async () => {
      const { tablets } = await tabletsWithAddresses();
      const who = d.nodeName ? `${d.nodeName} (${d.rpcAddress})` : d.rpcAddress;
      return (
        `<p>Tablet replicas on ${escapeHtml(who)}. Sizes in binary units (M = MiB); hover for the exact bytes, or read the JSON twin <a href="/api/v1/tablets">/api/v1/tablets</a>.</p>` +
        htmlTable(
          ['Table', 'Tablet', 'Partition', 'State', 'Role', 'Term', 'Leader', 'Commit / applied index', 'IntentsDB memtable', 'IntentsDB SST', 'Intents', 'RegularDB memtable', 'RegularDB SST'],
          tablets.map((t) => [
            t.table,
            link(`/tablet?id=${encodeURIComponent(t.tabletId)}`, t.tabletId),
            partitionText(t.partition),
            t.state,
            t.role === 'leader' || t.role === 'LEADER' ? raw(`<b>${escapeHtml(t.role)}</b>`) : t.role,
            t.term,
            t.leaderAddress ? raw(`<span title="${escapeHtml(t.leaderUuid)}">${escapeHtml(t.leaderAddress)}</span>`) : t.leaderUuid,
            `${t.commitIndex} / ${t.appliedIndex}`,
            bytesCell(t.intentsdb.memtableBytes),
            bytesCell(t.intentsdb.sstBytes),
            t.intentsdb.intentCount,
            bytesCell(t.regulardb.memtableBytes),
            bytesCell(t.regulardb.sstBytes),
          ]),
          { id: 'tablets' },
        )
      );
    },
  });
}

function registerSizeHistoryPage(d: TServerWebDeps): void {
  const { web, trackers } = d;
  web.route('/size-history', {
    title: 'Size history',
    // The master's /apply-timeline reads this from every tserver: ?table=NAME&since_ms=EPOCH_MS.
    json: (req) => {
      const since = Number(req.query.get('since_ms') ?? '0');
      if (!Number.isFinite(since) || since < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `since_ms must be milliseconds since the epoch, got '${req.query.get('since_ms') ?? ''}'`);
      return trackers.history.json({ uuid: d.uuid, rpcAddress: d.rpcAddress, nodeName: d.nodeName ?? '' }, req.query.get('table') ?? undefined, since);
    },
  });
}

function registerTabletPage(d: TServerWebDeps): void {
  const addressOf = addressOfPeer(d);
  const { web, trackers } = d;
  const tabletDetail = async (req: WebRequest): Promise<TabletDetail> => {
    const id = req.query.get('id') ?? '';
    if (!id) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'give ?id=TABLET_ID');
    const p = d.manager().list().find((x) => x.tabletId === id);
    if (!p && d.manager().failedOpenReplicas().some((f) => f.tabletId === id)) d.manager().get(id); // throws why it FAILED
    if (!p) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `this tablet server hosts no tablet ${id}`, { tabletId: id });
    return detailOf(p, d.manager(), trackers, d.uuid, d.rpcAddress);
  };
  web.route('/tablet', {
    title: 'Tablet',
    json: tabletDetail,
    html: async (req) => {
      const t = await tabletDetail(req);
      const facts = htmlTable(
        ['', ''],
        [
          ['Table', `${t.table} (${t.tableId})`],
          ['Partition', partitionText(t.partition)],
          ['State', t.lastError ? `${t.state}: ${t.lastError}` : t.state],
          ['Role / term / leader', `${t.role} / ${t.term} / ${addressOf(t.leaderUuid) || t.leaderUuid}`],
          ['Commit index / applied index / last index', `${t.commitIndex} / ${t.appliedIndex} / ${t.lastIndex}`],
          ['Raft log from index (older entries garbage-collected)', t.firstIndex],
          ['Frontier RegularDB (term.index)', `${t.frontier.regular.term}.${t.frontier.regular.index}`],
          ['Frontier IntentsDB (term.index)', `${t.frontier.intents.term}.${t.frontier.intents.index}`],
          ['RegularDB memtable / SST', raw(`${bytesCell(t.regulardb.memtableBytes).html} / ${bytesCell(t.regulardb.sstBytes).html}`)],
          ['IntentsDB memtable / SST / intents', raw(`${bytesCell(t.intentsdb.memtableBytes).html} / ${bytesCell(t.intentsdb.sstBytes).html} / ${t.intentsdb.intentCount}`)],
          ['RocksDB background work since open, RegularDB; IntentsDB: memtable flushes / compactions (their CPU ms) / write stall ms', backgroundText(t.background)],
          [`Raft log fdatasyncs since open: count / ms in all (mean) / longest ms / ${WAL_SLOW_SYNC_MS} ms or longer`, walSyncText(t.wal)],
          ['Wait queue: waiting now / waits (enable_wait_queues)', `${t.waitQueue.waiting} / ${t.waitQueue.waits}`],
          ['Read locks taken (serializable reads, as leader)', t.readLocks],
          ['Retryable requests: clients / writes remembered / running / copies answered / late copies refused', `${t.retryable.clients} / ${t.retryable.replicated} / ${t.retryable.running} / ${t.retryable.duplicates} / ${t.retryable.stale}`],
          ['History GC: passes run / skipped (for too few new versions; for no version older than the cutoff), versions scanned / dropped (of which dropped columns\' values)', `${t.historyGc.runs} / ${t.historyGc.skipped} (${t.historyGc.skippedFewNew}; ${t.historyGc.skippedNothingOld}), ${t.historyGc.versionsScanned} / ${t.historyGc.versionsDropped} (${t.historyGc.droppedColumnVersions})`],
          ['History GC: last cutoff HT / dropped / ms; history floor HT (reads below fail SNAPSHOT_TOO_OLD)', `${t.historyGc.lastCutoffHt} / ${t.historyGc.lastDropped} / ${t.historyGc.lastMs}; ${t.historyGc.historyFloorHt === '0' ? '0 (never collected)' : t.historyGc.historyFloorHt}`],
          ['Durability of the Raft log (ASYNC / FLUSH / FSYNC)', t.durability],
          ['Schema version / columns (name:type#id)', `${t.schemaVersion} / ${t.columns.map((c) => `${c.name}:${c.type}#${c.id}`).join(', ')}`],
          ['Row cache rows / bytes / hits / misses', t.regulardb.rowCache ? `${t.regulardb.rowCache.rows} / ${t.regulardb.rowCache.bytes} / ${t.regulardb.rowCache.hits} / ${t.regulardb.rowCache.misses}` : ''],
        ],
        { id: 'tablet' },
      );
      const cfg = htmlTable(
        ['Peer', 'Member', 'Role', 'Address', 'Match index'],
        t.raftConfig.map((r) => [r.uuid, r.memberType, r.role === 'LEADER' ? raw('<b>LEADER</b>') : r.role, r.rpcAddress, r.matchIndex ?? '']),
        { id: 'raft-config' },
      );
      return `<h2>${escapeHtml(t.tabletId)}</h2>${facts}<h2>Raft config</h2>${cfg}`;
    },
  });
}

function registerChecksumPage(d: TServerWebDeps): void {
  const { web } = d;
  // Replica comparison. `regulardb`: equal digests mean the same keys, versions and values in
  // RegularDB; each replica collects old versions (history GC) and applies committed intents on its
  // own, so these compare only between replicas with equal history floors and nothing left to apply.
  // With ?read_ht=HT (or now / now-MS: this server's hybrid time), `visible` digests the rows the replica shows at that hybrid time (resolving
  // intents through the status tablets): equal on replicas that applied the same Raft index, once
  // no transaction they met is pending, whatever their floors (at or below HT) and apply progress.
  web.route('/tablet-checksum', {
    title: 'Tablet checksum',
    json: async (req) => {
      const id = req.query.get('id') ?? '';
      const p = d.manager().list().find((x) => x.tabletId === id);
      if (!p) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `this tablet server hosts no tablet ${id}`, { tabletId: id });
      const at = req.query.get('read_ht');
      const visible = at === null ? undefined : await p.visibleChecksum(parseReadHt(at, () => p.hybridNow()));
      return {
        tabletId: id,
        regulardb: await p.regularChecksum(),
        historyFloorHt: String(p.historyFloorHt() ?? 0n),
        ...(visible ? { visible: { ...visible, readHt: String(visible.readHt) } } : {}),
      };
    },
  });
}

/** The tablet page's line for the Raft log's fdatasyncs. */
function walSyncText(w: WalSyncTimes | undefined): string {
  if (w === undefined) return '–';
  return `${w.fsyncs} / ${Math.round(w.syncMs)} (${w.fsyncs > 0 ? (w.syncMs / w.fsyncs).toFixed(2) : '–'}) / ${Math.round(w.syncMaxMs)} / ${w.slowSyncs}`;
}

/** The tablet page's line for RocksDB's background work of both databases. */
function backgroundText(b: { regulardb?: BackgroundWork; intentsdb?: BackgroundWork }): string {
  const one = (w: BackgroundWork | undefined): string =>
    w === undefined ? '–' : `${w.flushes} / ${w.compactions} (${Math.round(w.flushCpuSeconds * 1000)} / ${Math.round(w.compactionCpuSeconds * 1000)}) / ${Math.round(w.stallSeconds * 1000)}`;
  return `${one(b.regulardb)}; ${one(b.intentsdb)}`;
}
