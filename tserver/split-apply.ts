/**
 * Carrying out a tablet split on one replica (docs/splitting.md), and finding where to split.
 *
 * At the SPLIT entry every replica builds both children from its OWN parent data (no data over the
 * network) — on RocksDB a checkpoint of the parent's RegularDB (its table files hard-linked, so the
 * time does not grow with the tablet's size) that shows the child only its own rows until a
 * background pass deleted the others; on the in-memory engine, or when the checkpoint cannot be
 * taken, a copy of the rows in the child's key range — then marks the parent split (meta.json),
 * after which the parent answers TABLET_SPLIT. The children start their own Raft groups with the
 * entry's peers and an empty log: their databases are their initial state, identical (as seen
 * through the child's key range) on every replica because every replica takes the same data at the
 * same log position.
 *
 * Transactions: a split never carries intents. The SPLIT entry only splits when no transaction has
 * intents on the parent at that position (the leader checks before proposing, and holds back new
 * writes — TRY_AGAIN — meanwhile); otherwise it is a no-op on every replica and the master retries
 * later. Rows only are carried: frontier and apply-state records (below the data range) stay behind
 * (a linked child deletes its copies before it opens), so a child's databases start at op id 0,
 * matching its empty log.
 */
import { assert } from '../common/assert';
import { DbError, ErrorCode } from '../common/errors';
import { bytesOfHex, compareKeyBytes } from '../common/key-bounds';
import type { Logger } from '../common/log';
import { encodeDocKeyBytes, hashPrefixBytes } from '../common/partition-hash';
import { decodeDocKey, type KvEngine, type KvOp } from '../docdb';
import type { SplitChildMeta, TabletMeta } from './tablet/tablet-meta';
import type { TabletOp } from './tablet/tablet-op';
import type { TabletPeer } from './tablet/tablet-peer';
import type { SplitRoutes } from './tablet/tablet-split';

/** Rows one copy batch carries at most (each batch is one engine write; the loop yields between). */
const COPY_BATCH_ENTRIES = 2000;
const COPY_BATCH_BYTES = 4 << 20;
/** Entries a split-point search counts at most (a larger tablet is split at the middle of this many). */
export const SPLIT_POINT_SCAN_ENTRIES_MAX = 50_000_000;
const DATA_START = Uint8Array.of(0x20);
const DATA_END = Uint8Array.of(0xff);

export interface SplitApplyDeps {
  log: Logger;
  hasTablet(tabletId: string): boolean;
  /**
   * Create and open child replicas whose RegularDBs hold the rows of their ranges in `parentRegular`
   * (hard links of one checkpoint of its files, or a copy of the rows: `rows` copied). `leader`: the
   * SPLIT entry's named leader, which leads their first term at once (split-children.ts); without
   * one, `campaign` (the parent's leader replica) makes them start an election at once.
   */
  createChildren(metas: TabletMeta[], parentRegular: KvEngine, o: { leader?: string; campaign: boolean }): Promise<ChildBuilt[]>;
  /**
   * The RPC addresses of the children's leaders, waited for until performance.now() reaches
   * `untilMs` (those still without one are left out). Absent: not waited for.
   */
  childLeaders?(tabletIds: readonly string[], untilMs: number): Promise<Record<string, string>>;
}

/**
 * On the parent's leader, marking the parent split waits this long at most for the children's leaders
 * to be ready (the SPLIT's named replica leads their first term at once, split-children.ts; it is
 * ready once a follower's copy holds its no-op): the writes held meanwhile then meet TABLET_SPLIT
 * naming the children's leaders, and go to a child that serves instead of one still starting.
 */
export const SPLIT_CHILD_LEADER_WAIT_MS = 2_000;

/** How one child was built, and where its milliseconds went (logged with 'split child built'). */
export interface ChildBuilt {
  linked: boolean;
  rows: number;
  /** Checkpoint (links) and its one open, shared by both children. */
  checkpointMs: number;
  recoverMs: number;
  /** This child: its RegularDB clone (or copy) and meta.json, its log (written during the checkpoint), its open; `led`: it leads the first term now. */
  cloneMs: number;
  walMs: number;
  openMs: number;
  led: boolean;
}

/** The RegularDB key range [start, end) of a tablet's rows. */
export function rowRangeOf(meta: Pick<TabletMeta, 'schema' | 'partition'>): { start: Uint8Array; end: Uint8Array } {
  const p = meta.partition;
  if (meta.schema.hashColumns.length > 0) return { start: hashPrefixBytes(p.start), end: hashPrefixBytes(p.end) };
  const s = bytesOfHex(p.keyStart);
  const e = bytesOfHex(p.keyEnd);
  return { start: s.length > 0 ? s : DATA_START, end: e.length > 0 ? e : DATA_END };
}

/** Copy the rows of [range.start, range.end) from one engine to another, in bounded batches. */
export async function copyRows(from: KvEngine, to: KvEngine, range: { start: Uint8Array; end: Uint8Array }): Promise<number> {
  const it = from.iterator({ gte: range.start, lt: range.end });
  let copied = 0;
  try {
    let batch: KvOp[] = [];
    let bytes = 0;
    for (;;) {
      const kv = await it.next();
      if (kv) {
        batch.push({ type: 'put', key: kv[0], value: kv[1] });
        bytes += kv[0].byteLength + kv[1].byteLength;
      }
      if (batch.length > 0 && (!kv || batch.length >= COPY_BATCH_ENTRIES || bytes >= COPY_BATCH_BYTES)) {
        await to.write(batch, { sync: false });
        copied += batch.length;
        batch = [];
        bytes = 0;
      }
      if (!kv) break;
    }
  } finally {
    await it.close();
  }
  await to.flush();
  return copied;
}

/** SPLIT on one replica: both children built from this replica's data, then the parent retired. */
export async function applySplit(deps: SplitApplyDeps, parent: TabletPeer, op: Extract<TabletOp, { type: 'SPLIT' }>, index: number): Promise<SplitRoutes | undefined> {
  const meta = parent.meta;
  if (meta.splitInto) return undefined; // replayed after a restart: done before
  if (parent.txnsWithAppliedIntents() > 0) {
    deps.log.warn({ tablet: meta.tabletId, index, txns: parent.txnsWithAppliedIntents() }, 'SPLIT not carried out: transactions have intents on the tablet (the master tries again)');
    return undefined;
  }
  assert(op.children.length === 2, 'a split has two children');
  deps.log.info({ tablet: meta.tabletId, index }, 'split: SPLIT applying (every earlier entry applied)');
  // Read before building (the children take minutes to build at worst, leadership may move meanwhile):
  // whether the held writes wait here for the children's leaders, and for entries without a named
  // leader whether the children campaign at once (a stale answer only costs an early, safe, election).
  const campaign = parent.raftGroup().isLeader();
  // Built before a restart, or by remote bootstrap: skipped.
  const todo = op.children.filter((c) => !deps.hasTablet(c.tabletId));
  // rowLockEpochBase: the children's row lock fencing tokens start above the parent's (docs/rows.md).
  const epochBase = parent.rowLocks.childEpochBase();
  const metas = todo.map((child): TabletMeta => ({ tabletId: child.tabletId, tableId: meta.tableId, tableName: meta.tableName, schema: meta.schema, partition: child.partition, peers: op.peers, schemaVersion: meta.schemaVersion, ...(meta.durability ? { durability: meta.durability } : {}), rowLockEpochBase: epochBase }));
  const t0 = performance.now();
  const built = await deps.createChildren(metas, parent.engines().regular, { ...(op.leader ? { leader: op.leader } : {}), campaign });
  const buildMs = Math.round(performance.now() - t0);
  built.forEach((r, i) => deps.log.info({ parent: meta.tabletId, child: metas[i]!.tabletId, ...r, entries: r.rows, buildMs, index }, 'split child built from the parent data'));
  const ids = op.children.map((c) => c.tabletId);
  const t1 = performance.now();
  const leaders = campaign && deps.childLeaders ? await deps.childLeaders(ids, t1 + SPLIT_CHILD_LEADER_WAIT_MS) : {};
  parent.markSplit(op.children);
  deps.log.info({ tablet: meta.tabletId, children: ids, index, leaders, buildMs, leaderWaitMs: Math.round(performance.now() - t1) }, 'tablet split');
  return { replicas: op.peers.map((p) => ({ uuid: p.uuid, rpcAddress: p.rpcAddress ?? '' })).filter((p) => p.rpcAddress), leaders };
}

export interface SplitPoint {
  /** Hash tables: the right child's first hash. */
  hash?: number;
  /** Range tables: the right child's key start. */
  key?: Uint8Array;
}

/**
 * The middle of the tablet's data (by stored entries, so by size): hash tables split at the middle
 * entry's hash code (a hash code is never cut), range tables at its DocKey — or at its first
 * `prefix` range components (a split policy's prefix boundary). INVALID_ARGUMENT when the data has
 * no point strictly inside the tablet (empty, or one hash code / one prefix).
 */
export async function findSplitPoint(regular: KvEngine, meta: TabletMeta, prefix: number): Promise<SplitPoint> {
  const range = rowRangeOf(meta);
  const bySize = await middleBySize(regular, meta, prefix, range);
  if (bySize) return bySize;
  // Data mostly in the memtable (no size estimates there), and a large tablet: the middle of the
  // key space between its first and last keys — two seeks, where walking its entries took minutes
  // on a busy server. Even (sequential or random) keys put it at the data's middle; skewed keys
  // give unequal children, and the larger one splits again.
  const estimate = (await regular.stats()).keysApprox;
  const rawEstimate = sizedEngine(regular) ? (await sizedEngine(regular)!.stats()).keysApprox : estimate;
  if (rawEstimate >= ESTIMATE_TRUSTED_KEYS_MIN) {
    const p = await middleOfKeySpace(regular, meta, prefix, range);
    if (p) return p;
  }
  // RocksDB's key estimate spares a counting pass (the data is in the memtable here, where the
  // estimate is close); when it is off and no point is found, count exactly.
  if (estimate >= ESTIMATE_TRUSTED_KEYS_MIN) {
    const p = await middleOfFirst(regular, meta, prefix, range, estimate).catch(() => undefined);
    if (p) return p;
  }
  const n = await countEntries(regular, range);
  if (n < 2) throw new DbError(ErrorCode.INVALID_ARGUMENT, `tablet ${meta.tabletId} has too little data to split`);
  return middleOfFirst(regular, meta, prefix, range, n);
}

/** The first stored key at or after the middle of [first key, last key] (undefined: none strictly inside). */
async function middleOfKeySpace(regular: KvEngine, meta: TabletMeta, prefix: number, range: { start: Uint8Array; end: Uint8Array }): Promise<SplitPoint | undefined> {
  const firstKey = await firstOf(regular, { gte: range.start, lt: range.end });
  const lastKey = await firstOf(regular, { gte: range.start, lt: range.end, reverse: true });
  if (!firstKey || !lastKey) return undefined;
  const midKey = await firstOf(regular, { gte: bigToKey((keyToBig(firstKey) + keyToBig(lastKey)) / 2n), lt: range.end });
  if (!midKey) return undefined;
  const p = boundOf(midKey, meta, prefix);
  return above(p, boundOf(firstKey, meta, prefix)) && inside(p, meta) ? p : undefined;
}

async function firstOf(e: KvEngine, o: { gte: Uint8Array; lt: Uint8Array; reverse?: boolean }): Promise<Uint8Array | undefined> {
  const it = e.iterator(o);
  try {
    return (await it.next())?.[0];
  } finally {
    await it.close();
  }
}

/** Below this many estimated keys the entries are counted (small tablets: cheap, and exact). */
const ESTIMATE_TRUSTED_KEYS_MIN = 10_000;

async function countEntries(regular: KvEngine, range: { start: Uint8Array; end: Uint8Array }): Promise<number> {
  let n = 0;
  const count = regular.iterator({ gte: range.start, lt: range.end });
  try {
    while (n < SPLIT_POINT_SCAN_ENTRIES_MAX && (await count.next())) n++;
  } finally {
    await count.close();
  }
  return n;
}

/** The split point at the entry half-way through `n` entries (INVALID_ARGUMENT when none fits). */
async function middleOfFirst(regular: KvEngine, meta: TabletMeta, prefix: number, range: { start: Uint8Array; end: Uint8Array }, n: number): Promise<SplitPoint> {
  const it = regular.iterator({ gte: range.start, lt: range.end });
  try {
    let first: SplitPoint | undefined;
    let i = 0;
    for (let kv = await it.next(); kv; kv = await it.next(), i++) {
      // The first row's point is the floor: a split there would leave the left child empty.
      first ??= boundOf(kv[0], meta, prefix);
      if (i < Math.floor(n / 2)) continue;
      const p = boundOf(kv[0], meta, prefix);
      if (above(p, first) && inside(p, meta)) return p;
    }
  } finally {
    await it.close();
  }
  throw new DbError(ErrorCode.INVALID_ARGUMENT, `tablet ${meta.tabletId} cannot be split: its second half has no ${meta.schema.hashColumns.length > 0 ? 'hash code' : 'key'} above its first`);
}

/** An engine that estimates the bytes of a key range (RocksDB), possibly behind a RangeHidingEngine. */
function sizedEngine(e: KvEngine): (KvEngine & { approximateBytes(start: Uint8Array, end: Uint8Array): Promise<number> }) | undefined {
  const x = e as KvEngine & { approximateBytes?: unknown; inner?: KvEngine };
  if (typeof x.approximateBytes === 'function') return x as KvEngine & { approximateBytes(start: Uint8Array, end: Uint8Array): Promise<number> };
  return x.inner ? sizedEngine(x.inner) : undefined;
}

/** Below this many table-file bytes the middle is found by counting entries (the memtable is not in the estimate). */
const SIZE_SEARCH_MIN_BYTES = 4 << 20;
/** Probes per round, rounds at most, and the share of the bytes the final interval may hold (1/64). */
const SIZE_SEARCH_PROBES = 15;
const SIZE_SEARCH_ROUNDS_MAX = 12;
const SIZE_SEARCH_PRECISION = 64;
const KEY_BYTES = 16;

function keyToBig(k: Uint8Array): bigint {
  let v = 0n;
  for (let i = 0; i < KEY_BYTES; i++) v = (v << 8n) | BigInt(k[i] ?? 0);
  return v;
}

function bigToKey(v: bigint): Uint8Array {
  const out = new Uint8Array(KEY_BYTES);
  for (let i = KEY_BYTES - 1; i >= 0; i--, v >>= 8n) out[i] = Number(v & 0xffn);
  return out;
}

/**
 * The middle by size, without reading every entry (a scan of a large tablet took seconds per
 * 100k rows): narrow the key space on RocksDB's size estimates of [start, m) (16-way, probes of a
 * round at once) until the interval holding the half-way byte holds under 1/64 of the bytes, then
 * take the first stored key at or after its upper end. Undefined when the engine has
 * no estimates, the data is mostly in the memtable, or the point found is not strictly inside
 * (the caller counts entries then).
 */
async function middleBySize(regular: KvEngine, meta: TabletMeta, prefix: number, range: { start: Uint8Array; end: Uint8Array }): Promise<SplitPoint | undefined> {
  const sized = sizedEngine(regular);
  if (!sized) return undefined;
  const total = await sized.approximateBytes(range.start, range.end);
  if (total < SIZE_SEARCH_MIN_BYTES) return undefined;
  // Rounds of SIZE_SEARCH_PROBES probes sent at once: each round is one wait in the server's
  // (single, busy) libuv queue rather than one per probe — 48 sequential probes took minutes there.
  let lo = keyToBig(range.start);
  let hi = keyToBig(range.end);
  let loBytes = 0;
  let hiBytes = total;
  for (let round = 0; round < SIZE_SEARCH_ROUNDS_MAX && hi - lo > 1n && (hiBytes - loBytes) * SIZE_SEARCH_PRECISION > total; round++) {
    const step = (hi - lo) / BigInt(SIZE_SEARCH_PROBES + 1);
    if (step === 0n) break;
    const points = Array.from({ length: SIZE_SEARCH_PROBES }, (_, i) => lo + step * BigInt(i + 1));
    const sizes = await Promise.all(points.map((p) => sized.approximateBytes(range.start, bigToKey(p))));
    const i = sizes.findIndex((b) => b * 2 >= total);
    if (i >= 0) {
      hi = points[i]!;
      hiBytes = sizes[i]!;
    }
    if (i !== 0) {
      const j = i < 0 ? points.length - 1 : i - 1;
      lo = points[j]!;
      loBytes = sizes[j]!;
    }
  }
  const firstIt = regular.iterator({ gte: range.start, lt: range.end });
  const midIt = regular.iterator({ gte: bigToKey(hi), lt: range.end });
  try {
    const first = await firstIt.next();
    const at = await midIt.next();
    if (!first || !at) return undefined;
    const floor = boundOf(first[0], meta, prefix);
    const p = boundOf(at[0], meta, prefix);
    return above(p, floor) && inside(p, meta) ? p : undefined;
  } finally {
    await firstIt.close();
    await midIt.close();
  }
}

/** The split point a stored key stands for: its hash code, or its DocKey (or DocKey prefix). */
function boundOf(key: Uint8Array, meta: TabletMeta, prefix: number): SplitPoint {
  if (meta.schema.hashColumns.length > 0) return { hash: (key[1]! << 8) | key[2]! };
  const { key: dk, end } = decodeDocKey(key, 0);
  return { key: prefix > 0 ? encodeDocKeyBytes(0, [], dk.range.slice(0, prefix), { closeRange: false }) : Uint8Array.from(key.subarray(0, end)) };
}

function above(p: SplitPoint, floor: SplitPoint): boolean {
  if (p.hash !== undefined) return p.hash > floor.hash!;
  return compareKeyBytes(p.key!, floor.key!) > 0;
}

/** Strictly inside the tablet's partition (both children non-empty ranges). */
export function inside(p: SplitPoint, meta: TabletMeta): boolean {
  const part = meta.partition;
  if (p.hash !== undefined) return p.hash > part.start && p.hash < part.end;
  if (!p.key || p.key.length === 0) return false;
  const lo = bytesOfHex(part.keyStart);
  const hi = bytesOfHex(part.keyEnd);
  return (lo.length === 0 || compareKeyBytes(p.key, lo) > 0) && (hi.length === 0 || compareKeyBytes(p.key, hi) < 0);
}

/** The two children's partitions for a split point. */
export function childPartitions(meta: TabletMeta, point: SplitPoint): [SplitChildMeta['partition'], SplitChildMeta['partition']] {
  const p = meta.partition;
  if (point.hash !== undefined) return [{ start: p.start, end: point.hash }, { start: point.hash, end: p.end }];
  const k = Buffer.from(point.key ?? []).toString('hex');
  return [
    { start: p.start, end: p.end, ...(p.keyStart ? { keyStart: p.keyStart } : {}), keyEnd: k },
    { start: p.start, end: p.end, keyStart: k, ...(p.keyEnd ? { keyEnd: p.keyEnd } : {}) },
  ];
}
