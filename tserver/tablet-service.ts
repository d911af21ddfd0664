/**
 * TabletServerService (Write / Read / Scan) and TabletServerAdminService (CreateTablet, DeleteTablet,
 * LeaderStepdown, ChangeConfig, SetFlag, ListTablets, FetchSnapshotChunk). Requests are untrusted:
 * every field is validated against the tablet's schema and bad input becomes INVALID_ARGUMENT (or
 * TABLET_NOT_FOUND) — never a crash.
 */
import { emptyPartials, encodePartials, foldRows, parseAggregateSpecs, type AggregateWireSpec } from '../common/scan-aggregate';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { setFlagByOperator } from '../common/flag-policy';
import type { HybridClock } from '../common/hybrid-clock';
import type { HybridTime } from '../common/hybrid-time';
import { NodeId, TxnId } from '../common/ids';
import { parseIsolation } from './transaction/coordinator';
import { isValidTxnId } from './tablet/participant/txn-record';
import { ENABLE_TXN_FAST_PATH, TXN_FAST_PATH_ONE_ENTRY } from './transaction/txn-flags';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { Isolation, type Row, type TxnMeta } from '../docdb';
import type { ConfChange } from '../raft';
import { familiesFromPb, ROW_FORMAT_EXPORT_LINES, RPC_MAX_MESSAGE_SIZE, type MethodDef, type RpcServer } from '../rpc';
import type { TabletManager } from './tablet-manager';
import type { TabletMeta } from './tablet/tablet-meta';
import { parseTabletMeta } from './tablet/tablet-meta';
import { hexOf } from '../common/key-bounds';
import type { TabletPeer, WriteRequest } from './tablet/tablet-peer';
import type { RequestTag } from './tablet/tablet-op';
import { CLIENT_ID_MAX_BYTES } from './tablet/retryable-requests';
import { scanFilter } from './tablet/scan-filter';
import { rowsToExportLines } from './export-lines';
import { RAFT_ELECTION_TIMEOUT_TICKS } from './tserver-flags';
import type * as pb from './tserver-pb';
import { invalid, keyFromPb, keyToPb, rowOpFromPb, rowToPb } from './row-pb';

export { checkType, keyFromPb, keyToPb, rowOpFromPb, rowToPb, valueFromPb, valueToPb } from './row-pb';

export interface TServerMethods {
  write: MethodDef<pb.WriteRequestPB, pb.WriteResponsePB>;
  read: MethodDef<pb.ReadRequestPB, pb.ReadResponsePB>;
  scan: MethodDef<pb.ScanRequestPB, pb.ScanResponsePB>;
  createTablet: MethodDef<pb.CreateTabletRequestPB, pb.EmptyPB>;
  deleteTablet: MethodDef<pb.DeleteTabletRequestPB, pb.EmptyPB>;
  alterSchema: MethodDef<pb.AlterSchemaRequestPB, pb.AlterSchemaResponsePB>;
  leaderStepdown: MethodDef<pb.LeaderStepdownRequestPB, pb.EmptyPB>;
  changeConfig: MethodDef<pb.ChangeConfigRequestPB, pb.EmptyPB>;
  setFlag: MethodDef<pb.SetFlagRequestPB, pb.SetFlagResponsePB>;
  listTablets: MethodDef<pb.EmptyPB, pb.ListTabletsResponsePB>;
  fetchSnapshotChunk: MethodDef<pb.FetchSnapshotChunkRequestPB, pb.FetchSnapshotChunkResponsePB>;
}

/** Rows per Write request and keys per Read request (bigger requests: INVALID_ARGUMENT). */
/**
 * A new tablet's campaigning replica (CreateTablet's campaign) tries again this often while no leader
 * is known: its peers may not be created yet. Not shorter than a pre-vote and a vote round trip.
 */
const NEW_TABLET_CAMPAIGN_EVERY_TICKS = 6;
export const WRITE_OPS_MAX = 10_000;
export const READ_KEYS_MAX = 10_000;
export const SCAN_LIMIT_MAX = 10_000;
export const SCAN_LIMIT_DEFAULT = 1000;
/**
 * Bytes of rows one Read or Scan answer carries at most (at least one row; a quarter of
 * rpc_max_message_size when that is smaller): large rows end a page early — a scan answers a resume
 * key, a read the number of keys it answered — instead of an answer too large to send.
 */
export const READ_RESPONSE_BYTES_MAX = 8 * 1024 * 1024;
/** Transactional writes one coalesced Write request carries at most (the first plus `more`). */
export const WRITE_ITEMS_MAX = 256;

/** A write's row ops, checked against the tablet's schema. */
function parsedOps(t: TabletPeer, ops: pb.RowOpPB[] | undefined): WriteRequest['ops'] {
  const list = ops ?? [];
  if (list.length === 0) throw invalid('write has no ops');
  if (list.length > WRITE_OPS_MAX) throw invalid(`write has ${list.length} ops; at most ${WRITE_OPS_MAX}`);
  return list.map((o) => rowOpFromPb(t.meta, o));
}

/**
 * A request built with another schema version than the tablet's is refused before anything is done
 * (an ALTER TABLE ran or runs): column ids are only compared under the same schema. The client
 * rebuilds the request with the table's current schema, or waits for a tablet still behind.
 */
export function checkSchemaVersion(t: TabletPeer, requested: number | undefined): void {
  const mine = t.meta.schemaVersion;
  const theirs = requested ?? 0;
  if (theirs !== mine) {
    // Only the leader's version counts: a follower (which may lag) answers NOT_THE_LEADER as usual.
    t.checkLeader();
    throw new DbError(ErrorCode.SCHEMA_VERSION_MISMATCH, `tablet ${t.tabletId} of table ${t.meta.tableName} has schema version ${mine}; the request was built with version ${theirs}`, { tabletId: t.tabletId, tabletVersion: mine, requestVersion: theirs });
  }
}

/** The columns a read asks for (undefined: all of the schema's; DocDB ignores dropped columns' values itself: setSchemaColumns). */
function columnsFilter(meta: TabletMeta, cols: number[] | undefined): number[] | undefined {
  if (!cols || cols.length === 0) return undefined;
  for (const c of cols) if (!meta.schema.columns.some((x) => x.id === c)) throw invalid(`unknown column id ${c}`);
  return cols;
}

function schemaFromPb(s: pb.TableSchemaPB | null | undefined): unknown {
  const families = familiesFromPb(s?.families);
  return {
    columns: (s?.columns ?? []).map((c) => ({ name: c.name, id: c.id, type: c.type, nullable: c.nullable === true, ...(c.family ? { family: c.family } : {}) })),
    hashColumns: s?.hashColumns ?? [],
    rangeColumns: s?.rangeColumns ?? [],
    ...(families ? { families } : {}),
  };
}

/**
 * The retryable-request tag of a write (or of one item of a coalesced write), untrusted: undefined
 * when the client sent no ids, INVALID_ARGUMENT when they are malformed.
 */
export function requestTag(req: Pick<pb.WriteRequestPB, 'clientId' | 'minRunningRequestId'>, requestId: bigint | undefined): RequestTag | undefined {
  const clientId = req.clientId ?? '';
  if (clientId === '') {
    if (requestId) throw invalid('request_id without client_id');
    return undefined;
  }
  if (Buffer.byteLength(clientId) > CLIENT_ID_MAX_BYTES) throw invalid(`client_id is longer than ${CLIENT_ID_MAX_BYTES} bytes`);
  const id = BigInt(requestId ?? 0n);
  const min = BigInt(req.minRunningRequestId ?? 0n);
  if (id === 0n) throw invalid('client_id without request_id (request ids start at 1)');
  if (id > BigInt(Number.MAX_SAFE_INTEGER) || min > id) throw invalid(`request_id ${id} / min_running_request_id ${min}: ids are at most 2^53-1, and min_running at most the request's own`);
  return { clientId, requestId: Number(id), minRunning: Number(min) };
}

/** The transaction a Write/Read/Scan runs in (untrusted: every field checked). */
export function txnMetaFromPb(t: pb.TxnContextPB): TxnMeta {
  if (!isValidTxnId(t.txnId)) throw invalid(`bad txn_id '${String(t.txnId)}'`);
  if (!t.statusTablet) throw invalid('txn.status_tablet missing');
  const priority = t.priority ?? 0;
  if (!Number.isFinite(priority)) throw invalid('txn.priority must be finite');
  const startHt = t.startHt ? BigInt(t.startHt) : 0n;
  if (startHt <= 0n) throw invalid('txn.start_ht missing');
  return { txnId: TxnId(t.txnId), statusTablet: t.statusTablet, isolation: parseIsolation(t.isolation), priority, startHt };
}

/** The meta of a fast-path transaction that has no status record (no status tablet, no start time yet). */
function recordlessTxnMeta(t: pb.TxnContextPB): TxnMeta {
  if (!isValidTxnId(t.txnId)) throw invalid(`bad txn_id '${String(t.txnId)}'`);
  const priority = t.priority ?? 0;
  if (!Number.isFinite(priority)) throw invalid('txn.priority must be finite');
  return { txnId: TxnId(t.txnId), statusTablet: '', isolation: parseIsolation(t.isolation), priority, startHt: 0n };
}

/**
 * A single-tablet fast-path commit (docs/transactions.md): the transaction's whole write set as one
 * plain write, checked like its intents would be (tablet/fast-path.ts). NOT_SUPPORTED while
 * enable_txn_fast_path is off: the client then commits through the status tablet.
 */
function fastPathWrite(t: TabletPeer, txnPb: pb.TxnContextPB, flags: Flags): Pick<WriteRequest, 'fastPathTxn'> {
  if (!flags.get(ENABLE_TXN_FAST_PATH)) throw new DbError(ErrorCode.NOT_SUPPORTED, `tablet ${t.tabletId}: the single-tablet fast path is off (enable_txn_fast_path)`, { fastPath: 'off' });
  // A transaction without a status record (it never read nor wrote before its commit) sends no
  // status tablet and no read time: the tablet picks the read time under the row locks.
  if (!txnPb.statusTablet && !txnPb.startHt && !txnPb.readHt) return { fastPathTxn: { txn: recordlessTxnMeta(txnPb) } };
  const txn = txnMetaFromPb(txnPb);
  return { fastPathTxn: { txn, readHt: txnPb.readHt ? BigInt(txnPb.readHt) : txn.startHt } };
}

/**
 * Read time and uncertainty limit of a Read/Scan. In a transaction: its read time and the limit it
 * carries (every tablet of the transaction reads with the same pair); an older client that sends no
 * limit gets read time + this server's max_clock_skew_usec, since a transaction's read time was
 * picked by a server (its status tablet). Outside one: read_ht 0 lets the leader pick both; read_ht
 * with global_limit_ht is a restarted/continued read; read_ht alone is an explicit snapshot.
 */
function readTimeFields(t: TabletPeer, req: pb.ReadRequestPB | pb.ScanRequestPB, txn: TxnMeta | undefined): { txnId?: TxnId; readHt?: bigint; globalLimitHt?: bigint } {
  if (txn) {
    const readHt = req.txn?.readHt ? BigInt(req.txn.readHt) : txn.startHt;
    const limit = req.txn?.globalLimitHt ? BigInt(req.txn.globalLimitHt) : t.globalLimitFor(readHt);
    return { txnId: txn.txnId, readHt, ...(limit !== undefined ? { globalLimitHt: limit } : {}) };
  }
  if (!req.readHt) return {};
  return { readHt: BigInt(req.readHt), ...(req.globalLimitHt ? { globalLimitHt: BigInt(req.globalLimitHt) } : {}) };
}

// ---- the service -------------------------------------------------------------------------------

export interface TabletServiceDeps {
  manager: TabletManager;
  flags: Flags;
  clock: HybridClock;
  selfUuid: string;
  /** Tablet reports (shared with the heartbeater). */
  reports(): Promise<pb.TabletReportPB[]>;
}

/**
 * Rows for aggregates that read primary-key columns (`min(k)`): a scanned row holds its key columns
 * in its DocKey, not among its columns, so their values are put there for the fold. Rows as they
 * are when no aggregate reads a key column.
 */
export function withKeyColumns(schema: TabletMeta['schema'], specs: readonly AggregateWireSpec[], rows: readonly Row[]): ReadonlyArray<{ columns: ReadonlyMap<number, unknown> }> {
  const idOf = new Map(schema.columns.map((c) => [c.name, c.id]));
  const keyCols: Array<[number, (r: Row) => unknown]> = [
    ...schema.hashColumns.map((n, j): [number, (r: Row) => unknown] => [idOf.get(n)!, (r) => r.key.hashed[j]]),
    ...schema.rangeColumns.map((n, j): [number, (r: Row) => unknown] => [idOf.get(n)!, (r) => r.key.range[j]]),
  ].filter(([id]) => specs.some((s) => s.columnId === id));
  if (keyCols.length === 0) return rows;
  return rows.map((r) => {
    const columns = new Map<number, unknown>(r.columns);
    for (const [id, get] of keyCols) columns.set(id, get(r) ?? null);
    return { columns };
  });
}

export class TabletService {
  constructor(private readonly deps: TabletServiceDeps) {}

  private responseBytesMax(): number {
    return Math.max(64 * 1024, Math.min(READ_RESPONSE_BYTES_MAX, Math.floor(this.deps.flags.get(RPC_MAX_MESSAGE_SIZE) / 4)));
  }

  private tablet(id: string | undefined): TabletPeer {
    if (!id) throw invalid('tablet_id missing');
    return this.deps.manager.get(id);
  }

  async write(req: pb.WriteRequestPB, ctx?: { deadlineMonoMs: number }): Promise<pb.WriteResponsePB> {
    const t = this.tablet(req.tabletId);
    const request = requestTag(req, req.requestId);
    // A copy of a write this tablet already replicated, or is running, is answered with that write's
    // outcome even when an ALTER TABLE came after it (the copy's schema version is then old): it was
    // (or is being) done, and must not be done again as a new write. (With the version current, the
    // tablet's own deduplication answers copies: no lookup here.)
    if ((req.schemaVersion ?? 0) !== t.meta.schemaVersion && !req.more?.length && request) {
      const seen = t.seenRequest(request);
      if (seen !== undefined) return { writeHt: await seen, propagatedHt: this.deps.clock.now() };
    }
    checkSchemaVersion(t, req.schemaVersion);
    // Status records are the coordinator's alone (TXN_STATUS entries); a client row there would be
    // read back as a transaction record (or shadow one).
    if (t.meta.tableName === TRANSACTIONS_TABLE) {
      throw new DbError(ErrorCode.NOT_SUPPORTED, `table ${TRANSACTIONS_TABLE} is a system table: clients cannot write it`, { table: TRANSACTIONS_TABLE, tabletId: t.tabletId });
    }
    const propagated = { ...(req.propagatedHt ? { propagatedHt: BigInt(req.propagatedHt) } : {}), ...(ctx ? { deadlineMonoMs: ctx.deadlineMonoMs } : {}) };
    const more = req.more ?? [];
    if (more.length > 0) {
      // Several transactional writes coalesced by a client: each is handled (and fails) on its own,
      // all at once, so their Raft entries share the tablet's next append.
      if (!req.txn?.txnId) throw invalid('write.more needs txn: only transactional writes are coalesced');
      if (more.length >= WRITE_ITEMS_MAX) throw invalid(`write has ${more.length + 1} transactional writes; at most ${WRITE_ITEMS_MAX}`);
      const items = [{ ops: req.ops, txn: req.txn, requestId: req.requestId }, ...more];
      const total = items.reduce((n, i) => n + (i.ops?.length ?? 0), 0);
      if (total > WRITE_OPS_MAX) throw invalid(`write has ${total} ops; at most ${WRITE_OPS_MAX}`);
      // Held while the tablet's SPLIT is in flight, then TABLET_SPLIT: the client sends each write again alone, to its row's child.
      await t.splitHold(ctx?.deadlineMonoMs);
      // Not the (ready) leader: the whole request goes elsewhere, as one (not one answer per write).
      t.checkLeader();
      const fastPath = req.singleTabletCommit === true;
      const settled = await Promise.allSettled(
        fastPath && this.deps.flags.get(TXN_FAST_PATH_ONE_ENTRY) ? this.fastPathCommits(t, items, propagated, req) : items.map((i) => {
          if (!i.txn?.txnId) return Promise.reject(invalid('write.more item without txn'));
          const tag = requestTag(req, i.requestId);
          // Fast-path commits coalesced by a client: each item is a whole transaction, committed on its own.
          if (fastPath) return this.fastPathCommit(t, i.ops, i.txn, { ...propagated, ...(tag ? { request: tag } : {}) });
          return this.writeTxn(t, i.ops, i.txn, { ...propagated, coalesced: true, ...(tag ? { request: tag } : {}) });
        }),
      );
      let writeHt = 0n;
      const results: pb.WriteResultPB[] = settled.map((r) => {
        if (r.status === 'fulfilled') {
          if (r.value > writeHt) writeHt = r.value;
          return { writeHt: r.value };
        }
        return DbError.from(r.reason).toResult();
      });
      return { writeHt, propagatedHt: this.deps.clock.now(), results };
    }
    if (req.txn?.txnId && req.singleTabletCommit === true) {
      const ht = await t.write({ ops: parsedOps(t, req.ops), ...fastPathWrite(t, req.txn, this.deps.flags), ...(req.propagatedHt ? { propagatedHt: BigInt(req.propagatedHt) } : {}), ...(request ? { request } : {}) });
      return { writeHt: ht, propagatedHt: this.deps.clock.now() };
    }
    if (req.txn?.txnId) {
      const ht = await this.writeTxn(t, req.ops, req.txn, request ? { ...propagated, request } : propagated);
      return { writeHt: ht, propagatedHt: this.deps.clock.now() };
    }
    const ht = await t.write({ ops: parsedOps(t, req.ops), ...(req.propagatedHt ? { propagatedHt: BigInt(req.propagatedHt) } : {}), ...(request ? { request } : {}) });
    return { writeHt: ht, propagatedHt: this.deps.clock.now() };
  }

  /**
   * Fast-path commits a client coalesced: the well-formed ones share one Raft entry where they can
   * (tablet/fast-path-batch.ts); a malformed or refused one rejects, failing only itself.
   */
  private fastPathCommits(t: TabletPeer, items: Array<{ ops?: pb.RowOpPB[]; txn?: pb.TxnContextPB; requestId?: bigint }>, o: { propagatedHt?: bigint; deadlineMonoMs?: number }, req: pb.WriteRequestPB): Array<Promise<HybridTime>> {
    const out: Array<Promise<HybridTime> | undefined> = [];
    const ok: Array<{ at: number; write: WriteRequest }> = [];
    items.forEach((i, at) => {
      try {
        if (!i.txn?.txnId) throw invalid('write.more item without txn');
        const tag = requestTag(req, i.requestId);
        ok.push({ at, write: { ops: parsedOps(t, i.ops), ...fastPathWrite(t, i.txn, this.deps.flags), ...o, ...(tag ? { request: tag } : {}) } });
        out.push(undefined);
      } catch (e) {
        out.push(Promise.reject(e));
      }
    });
    const hts = ok.length > 0 ? t.writeCombined(ok.map((x) => x.write)) : [];
    ok.forEach((x, j) => (out[x.at] = hts[j]));
    return out as Array<Promise<HybridTime>>;
  }

  /** One single-tablet fast-path commit (async: a malformed or refused one rejects, failing only itself). */
  private async fastPathCommit(t: TabletPeer, ops: pb.RowOpPB[] | undefined, txnPb: pb.TxnContextPB, o: { propagatedHt?: bigint; deadlineMonoMs?: number; request?: RequestTag }): Promise<HybridTime> {
    return t.write({ ops: parsedOps(t, ops), ...fastPathWrite(t, txnPb, this.deps.flags), ...o });
  }

  /** Async so that a malformed write rejects (and fails only itself in a coalesced request) rather than throws. */
  private async writeTxn(t: TabletPeer, ops: pb.RowOpPB[] | undefined, txnPb: pb.TxnContextPB, propagated: { propagatedHt?: bigint; deadlineMonoMs?: number; coalesced?: boolean; request?: RequestTag }): Promise<HybridTime> {
    const parsed = parsedOps(t, ops);
    const txn = txnMetaFromPb(txnPb);
    const readHt = txnPb.readHt ? BigInt(txnPb.readHt) : txn.startHt;
    return t.writeIntents({ txn, readHt, ops: parsed, ...propagated });
  }

  async read(req: pb.ReadRequestPB, ctx?: { deadlineMonoMs: number }): Promise<pb.ReadResponsePB> {
    const txn = req.txn?.txnId ? txnMetaFromPb(req.txn) : undefined;
    const t = this.tablet(req.tabletId);
    checkSchemaVersion(t, req.schemaVersion);
    const keysPb = req.keys ?? [];
    if (keysPb.length > READ_KEYS_MAX) throw invalid(`read has ${keysPb.length} keys; at most ${READ_KEYS_MAX}`);
    const keys = keysPb.map((k) => keyFromPb(t.meta, k));
    const columns = columnsFilter(t.meta, req.columns);
    const common = { maxBytes: this.responseBytesMax(), ...(columns ? { columns } : {}), ...(req.propagatedHt ? { propagatedHt: BigInt(req.propagatedHt) } : {}) };
    // A serializable transaction reads under read locks at a time the tablet picks (no snapshot).
    const r = txn?.isolation === Isolation.SERIALIZABLE ? await t.readSerializable(keys, txn, { ...common, ...(ctx ? { deadlineMonoMs: ctx.deadlineMonoMs } : {}) }) : await t.read(keys, { ...common, ...readTimeFields(t, req, txn) });
    return {
      rows: r.rows.map((row, i) => (row ? rowToPb(row) : { key: keyToPb(keys[i]!), columns: [], writeHt: 0n })),
      found: r.rows.map((row) => row !== undefined),
      keysAnswered: r.rows.length,
      readHt: r.readHt,
      propagatedHt: this.deps.clock.now(),
      globalLimitHt: r.globalLimitHt ?? 0n,
    };
  }

  async scan(req: pb.ScanRequestPB, ctx?: { deadlineMonoMs: number }): Promise<pb.ScanResponsePB> {
    const txn = req.txn?.txnId ? txnMetaFromPb(req.txn) : undefined;
    const t = this.tablet(req.tabletId);
    checkSchemaVersion(t, req.schemaVersion);
    const limit = req.limit ? Number(req.limit) : SCAN_LIMIT_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > SCAN_LIMIT_MAX) throw invalid(`scan limit must be 1..${SCAN_LIMIT_MAX}`);
    const columns = columnsFilter(t.meta, req.columns);
    const filter = scanFilter(t.meta, req.filter);
    const aggregate = req.aggregate ? parseAggregateSpecs(req.aggregate, new Set(t.meta.schema.columns.map((c) => c.id))) : undefined;
    const common = {
      limit,
      ...(filter ? { filter } : {}),
      maxBytes: this.responseBytesMax(),
      ...(req.startKey?.length ? { startKey: req.startKey } : {}),
      ...(req.endKey?.length ? { endKey: req.endKey } : {}),
      ...(columns ? { columns } : {}),
      ...(req.propagatedHt ? { propagatedHt: BigInt(req.propagatedHt) } : {}),
    };
    const r = txn?.isolation === Isolation.SERIALIZABLE ? await t.scanSerializable(txn, { ...common, ...(ctx ? { deadlineMonoMs: ctx.deadlineMonoMs } : {}) }) : await t.scan({ ...common, ...readTimeFields(t, req, txn) });
    const counters = filter ? { cellsRead: BigInt(r.cellsRead ?? 0), cellsSkipped: BigInt(r.cellsSkipped ?? 0) } : {};
    const page = { resumeKey: r.resumeKey ?? new Uint8Array(0), readHt: r.readHt, propagatedHt: this.deps.clock.now(), globalLimitHt: r.globalLimitHt ?? 0n, ...counters };
    if (!aggregate && req.rowFormat === ROW_FORMAT_EXPORT_LINES) return { rows: [], lines: rowsToExportLines(t.meta.schema, r.rows, columns), lineCount: r.rows.length, ...page };
    if (!aggregate) return { rows: r.rows.map(rowToPb), ...page };
    // Folded here: the page's rows never leave the tablet server, only their partial results.
    const acc = emptyPartials(aggregate);
    foldRows(aggregate, acc, withKeyColumns(t.meta.schema, aggregate, r.rows));
    return { rows: [], aggregates: encodePartials(acc), ...page };
  }

  async createTablet(req: pb.CreateTabletRequestPB): Promise<pb.EmptyPB> {
    const meta = parseTabletMeta({
      tabletId: req.tabletId,
      tableId: req.tableId ?? '',
      tableName: req.tableName ?? '',
      schema: schemaFromPb(req.schema),
      partition: { start: req.partition?.start ?? 0, end: req.partition?.end || 65536, keyStart: hexOf(req.partition?.keyStart), keyEnd: hexOf(req.partition?.keyEnd) },
      peers: (req.peers ?? []).map((p) => ({ uuid: p.uuid, rpcAddress: p.rpcAddress, memberType: p.memberType || 'VOTER' })),
      schemaVersion: req.schemaVersion ?? 0,
      durability: req.durability || undefined,
    });
    const peer = await this.deps.manager.createTablet(meta);
    // The master's pick among a new tablet's replicas (master/catalog-round.ts): campaign now, and again
    // every few ticks for two election timeouts while the other replicas are still being created.
    if (req.campaign === true && !peer.isLeaderReady()) peer.campaignSoon({ forTicks: 2 * this.deps.flags.get(RAFT_ELECTION_TIMEOUT_TICKS), everyTicks: NEW_TABLET_CAMPAIGN_EVERY_TICKS });
    return {};
  }

  /** The master's AlterSchema (tablet leader): replicate the table's new schema through Raft. */
  async alterSchema(req: pb.AlterSchemaRequestPB): Promise<pb.AlterSchemaResponsePB> {
    const t = this.tablet(req.tabletId);
    const version = req.schemaVersion ?? 0;
    if (!Number.isSafeInteger(version) || version < 1) throw invalid('schema_version must be at least 1');
    const meta = parseTabletMeta({ ...t.meta, schema: schemaFromPb(req.schema), tableName: req.tableName || t.meta.tableName, schemaVersion: version, durability: req.durability || t.meta.durability });
    return { schemaVersion: await t.alterSchema(meta.schema, version, meta.tableName, meta.durability) };
  }

  async deleteTablet(req: pb.DeleteTabletRequestPB): Promise<pb.EmptyPB> {
    if (!req.tabletId) throw invalid('tablet_id missing');
    await this.deps.manager.deleteTablet(req.tabletId);
    return {};
  }

  async leaderStepdown(req: pb.LeaderStepdownRequestPB): Promise<pb.EmptyPB> {
    const t = this.tablet(req.tabletId);
    const g = t.raftGroup();
    if (!g.isLeader()) {
      const uuid = g.leaderId();
      throw new DbError(ErrorCode.NOT_THE_LEADER, `tablet ${t.tabletId}: this replica is not the leader`, { leaderUuid: uuid, leaderHint: (uuid && this.deps.manager.addressOf(uuid)) || '' });
    }
    await t.transferLeadership(req.newLeaderUuid ? NodeId(req.newLeaderUuid) : undefined);
    return {};
  }

  async changeConfig(req: pb.ChangeConfigRequestPB): Promise<pb.EmptyPB> {
    const t = this.tablet(req.tabletId);
    const uuid = req.peer?.uuid;
    if (!uuid) throw invalid('peer.uuid missing');
    if (req.peer?.rpcAddress) this.deps.manager.learnAddress(uuid, req.peer.rpcAddress);
    const node = NodeId(uuid);
    let cc: ConfChange;
    switch (req.type) {
      case 'ADD_VOTER':
        cc = { type: 'addVoter', node };
        break;
      case 'ADD_LEARNER':
        cc = { type: 'addLearner', node };
        break;
      case 'PROMOTE':
        cc = { type: 'promoteLearner', node };
        break;
      case 'REMOVE':
        cc = { type: 'removeNode', node };
        break;
      default:
        throw invalid(`unknown change type '${String(req.type)}' (ADD_VOTER | ADD_LEARNER | PROMOTE | REMOVE)`);
    }
    await t.raftGroup().changeConfig(cc);
    return {};
  }

  setFlag(req: pb.SetFlagRequestPB): Promise<pb.SetFlagResponsePB> {
    if (!req.name) throw invalid('flag name missing');
    const v = setFlagByOperator(this.deps.flags, req.name, req.value ?? '', req.force === true);
    return Promise.resolve({ name: req.name, value: String(v) });
  }

  async listTablets(): Promise<pb.ListTabletsResponsePB> {
    return { tablets: await this.deps.reports() };
  }

  async fetchSnapshotChunk(req: pb.FetchSnapshotChunkRequestPB): Promise<pb.FetchSnapshotChunkResponsePB> {
    if (!req.tabletId) throw invalid('tablet_id missing');
    const c = await this.deps.manager.serveChunk({ tabletId: req.tabletId, sessionId: req.sessionId ?? '', bytesMax: Number(req.bytesMax ?? 0) });
    return { sessionId: c.sessionId, db: c.db, keys: c.pairs.map((p) => p[0]), values: c.pairs.map((p) => p[1]), done: c.done };
  }

  register(server: RpcServer, m: TServerMethods): void {
    server.handle(m.write, (r, ctx) => this.write(r, ctx));
    server.handle(m.read, (r, ctx) => this.read(r, ctx));
    server.handle(m.scan, (r, ctx) => this.scan(r, ctx));
    server.handle(m.createTablet, (r) => this.createTablet(r));
    server.handle(m.deleteTablet, (r) => this.deleteTablet(r));
    server.handle(m.alterSchema, (r) => this.alterSchema(r));
    server.handle(m.leaderStepdown, (r) => this.leaderStepdown(r));
    server.handle(m.changeConfig, (r) => this.changeConfig(r));
    server.handle(m.setFlag, (r) => this.setFlag(r));
    server.handle(m.listTablets, () => this.listTablets());
    server.handle(m.fetchSnapshotChunk, (r) => this.fetchSnapshotChunk(r));
  }
}
