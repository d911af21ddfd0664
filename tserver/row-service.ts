/**
 * RowService (rpc/protos/rows.proto): MutateRows — increment, append, checkAndMutate, mutateRow and
 * mutateRows of one tablet, one Raft entry each (tablet/row-ops.ts) — and LockRow / RowLock (renew,
 * unlock: tablet/row-locks.ts). Requests are untrusted: every field is checked against the tablet's
 * schema, bad input is INVALID_ARGUMENT, never a crash.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import type { HybridClock } from '../common/hybrid-clock';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import type { Primitive, Row } from '../docdb';
import type { RowMethods } from '../rpc';
import type * as rpb from '../rpc';
import type { RowPB } from '../rpc';
import type { RpcServer } from '../rpc';
import { checkSchemaVersion, checkType, keyFromPb, requestTag, valueFromPb, valueToPb, WRITE_ITEMS_MAX, WRITE_OPS_MAX } from './tablet-service';
import type { TabletManager } from './tablet-manager';
import type { ColumnSchema, TabletMeta } from './tablet/tablet-meta';
import type { TabletPeer } from './tablet/tablet-peer';
import type { WriteRequest } from './tablet/tablet-types';
import { CompareOp, evaluateRowMutations, readsRows, resultColumns, type CellMutation, type RowCondition, type RowMutation } from './tablet/row-ops';
import { ROW_CELL_BYTES_MAX, ROW_LOCK_LEASE_MS } from './tablet/row-flags';
import { docKeyString } from './tablet/tablet-op';
import { WRITE_TIMEOUT_MS } from './tserver-flags';
import { schemaIndex } from './row-pb';
import type { LockGrant } from './tablet/row-locks';

/** Conditions and mutations of one row at most. */
export const ROW_CELL_OPS_MAX = 1000;

export interface RowServiceDeps {
  manager(): TabletManager;
  flags: Flags;
  clock: HybridClock;
}

function invalid(msg: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg, details);
}

function column(meta: TabletMeta, id: number | undefined): ColumnSchema {
  const x = schemaIndex(meta.schema);
  const col = x.byId.get(id ?? -1);
  if (!col) throw invalid(`unknown column id ${String(id)}`, { unknownColumn: true });
  if (x.keyIds.has(col.id)) throw invalid(`column ${col.name} is part of the primary key; row operations change other columns`);
  return col;
}

function parseCondition(meta: TabletMeta, c: rpb.RowConditionPB): RowCondition {
  const col = column(meta, c.columnId);
  const op = c.op ?? '';
  if (!Object.prototype.hasOwnProperty.call(CompareOp, op)) throw invalid(`unknown condition '${op}' (EQ | NE | LT | GT | EXISTS | ABSENT)`);
  if (op === CompareOp.EXISTS || op === CompareOp.ABSENT) return { columnId: col.id, op: op as CompareOp };
  const value = valueFromPb(c.value);
  if (value === null) throw invalid(`condition ${op} on ${col.name} needs a value (test an absent cell with ABSENT)`);
  checkType(col, value, false);
  return { columnId: col.id, op: op as CompareOp, value };
}

function parseMutation(meta: TabletMeta, m: rpb.CellMutationPB): CellMutation {
  if (m.type === 'DELETE_ROW') return { type: 'DELETE_ROW' };
  const col = column(meta, m.columnId);
  switch (m.type) {
    case 'PUT': {
      const value: Primitive = valueFromPb(m.value);
      checkType(col, value, col.nullable);
      return { type: 'PUT', columnId: col.id, value };
    }
    case 'INCREMENT':
      if (col.type !== 'int64') throw invalid(`increment: column ${col.name} is ${col.type}, not int64`, { column: col.name });
      return { type: 'INCREMENT', columnId: col.id, by: BigInt(m.by ?? 0n) };
    case 'APPEND': {
      if (col.type !== 'string' && col.type !== 'bytes') throw invalid(`append: column ${col.name} is ${col.type}, not string or bytes`, { column: col.name });
      const value = valueFromPb(m.value);
      if (value === null) throw invalid(`append to ${col.name} needs a value`);
      checkType(col, value, false);
      return { type: 'APPEND', columnId: col.id, value: value as string | Uint8Array };
    }
    default:
      throw invalid(`unknown mutation '${String(m.type)}' (PUT | DELETE_ROW | INCREMENT | APPEND)`);
  }
}

/** The rows of a MutateRows request, checked (one mutation list per distinct row). */
export function parseRowMutations(meta: TabletMeta, rows: rpb.RowMutationPB[] | undefined, rowKeys: string[] = []): RowMutation[] {
  const list = rows ?? [];
  if (list.length === 0) throw invalid('mutate_rows has no rows');
  if (list.length > WRITE_OPS_MAX) throw invalid(`mutate_rows has ${list.length} rows; at most ${WRITE_OPS_MAX}`);
  const seen = new Set<string>();
  return list.map((r) => {
    const key = keyFromPb(meta, r.key);
    const k = docKeyString(key);
    if (seen.has(k)) throw invalid('mutate_rows names a row twice: give all of its mutations in one entry');
    seen.add(k);
    rowKeys.push(k);
    const conditions = (r.conditions ?? []).map((c) => parseCondition(meta, c));
    const mutations = (r.mutations ?? []).map((m) => parseMutation(meta, m));
    if (conditions.length + mutations.length > ROW_CELL_OPS_MAX) throw invalid(`a row has ${conditions.length + mutations.length} conditions and mutations; at most ${ROW_CELL_OPS_MAX}`);
    const out: RowMutation = { key, conditions, mutations };
    if (r.lockId) out.lock = { lockId: r.lockId, token: Number(r.lockToken ?? 0n) };
    if (r.unlockAfter) {
      if (!r.lockId) throw invalid('unlock_after needs the lock the write carries (lock_id)');
      out.unlockAfter = true;
    }
    return out;
  });
}

/** An error's details for a coalesced call's result (bigints as strings; unserialisable details dropped). */
function detailsJson(details: Record<string, unknown>): string {
  try {
    return Object.keys(details).length === 0 ? '' : JSON.stringify(details, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return '';
  }
}

/**
 * The new values of one row's changed cells. Without the row's key: the caller knows which row it
 * asked about (results are in the request's row order), and encoding and decoding a key per answer
 * was a share of a coalesced increment's cost on both sides.
 */
function resultPb(cells: Map<number, Primitive>): RowPB {
  const columns: rpb.ColumnValuePB[] = [];
  for (const [columnId, v] of cells) columns.push({ columnId, value: valueToPb(v) });
  return { columns };
}

interface PreparedCall {
  rows: RowMutation[];
  write: WriteRequest;
  /** Set by the computation under the rows' latches (absent for a resent copy answered from history). */
  results?: Array<Map<number, Primitive>>;
}

interface CallAnswer {
  applied: boolean;
  writeHt: bigint;
  results: RowPB[];
}

export class RowService {
  constructor(private readonly deps: RowServiceDeps) {}

  private tablet(id: string | undefined, schemaVersion: number | undefined, propagatedHt: bigint | undefined): TabletPeer {
    if (!id) throw invalid('tablet_id missing');
    const t = this.deps.manager().get(id);
    checkSchemaVersion(t, schemaVersion);
    if (t.meta.tableName === TRANSACTIONS_TABLE) throw new DbError(ErrorCode.NOT_SUPPORTED, `table ${TRANSACTIONS_TABLE} is a system table: clients cannot write it`, { table: TRANSACTIONS_TABLE });
    if (propagatedHt) this.deps.clock.update(BigInt(propagatedHt));
    return t;
  }

  private deadline(ctx?: { deadlineMonoMs: number }): number {
    return ctx?.deadlineMonoMs ?? performance.now() + this.deps.flags.get(WRITE_TIMEOUT_MS);
  }

  async mutateRows(req: rpb.MutateRowsRequestPB, ctx?: { deadlineMonoMs: number }): Promise<rpb.MutateRowsResponsePB> {
    const t = this.tablet(req.tabletId, req.schemaVersion, req.propagatedHt);
    const more = req.more ?? [];
    if (more.length === 0) {
      const r = await this.mutateOne(t, req, req.rows, req.requestId, req.waitForLocks === true, ctx);
      return { applied: r.applied, writeHt: r.writeHt, propagatedHt: this.deps.clock.now(), results: r.results };
    }
    // Several calls coalesced by a client: each is handled (and fails) on its own, all at once, so
    // their Raft entries share the tablet's next append (as coalesced transactional writes do).
    if (more.length >= WRITE_ITEMS_MAX) throw invalid(`mutate_rows has ${more.length + 1} calls; at most ${WRITE_ITEMS_MAX}`);
    const items = [{ rows: req.rows, requestId: req.requestId }, ...more];
    const total = items.reduce((n, i) => n + (i.rows?.length ?? 0), 0);
    if (total > WRITE_OPS_MAX) throw invalid(`mutate_rows has ${total} rows in all; at most ${WRITE_OPS_MAX}`);
    // Not the (ready) leader: the whole request goes elsewhere, as one (not one answer per call).
    t.checkLeader();
    // A waiting call would hold every other call's answer: coalesced calls never wait for locks.
    // Calls that parse go to the tablet together: their writes share one Raft entry where they can.
    const prepared = items.map((i) => {
      try {
        return this.prepare(t, req, i.rows, i.requestId, false, ctx);
      } catch (e) {
        return e instanceof Error ? e : new Error(String(e));
      }
    });
    const ok = prepared.filter((p): p is PreparedCall => !(p instanceof Error));
    const hts = t.writeCombined(ok.map((p) => p.write));
    const answers = new Map(ok.map((p, n) => [p, this.finish(t, p, hts[n]!)]));
    const settled = await Promise.allSettled(prepared.map((p) => (p instanceof Error ? Promise.reject(p) : answers.get(p)!)));
    const out: rpb.MutateRowsResultPB[] = settled.map((r) => {
      if (r.status === 'fulfilled') return r.value;
      const e = DbError.from(r.reason);
      return { ...e.toResult(), detailsJson: detailsJson(e.details) };
    });
    return { propagatedHt: this.deps.clock.now(), items: out };
  }

  /** One call's rows: one computed write (tablet/row-ops.ts). */
  private async mutateOne(t: TabletPeer, req: rpb.MutateRowsRequestPB, rowsPb: rpb.RowMutationPB[] | undefined, requestId: bigint | undefined, waitForLocks: boolean, ctx?: { deadlineMonoMs: number }): Promise<CallAnswer> {
    const p = this.prepare(t, req, rowsPb, requestId, waitForLocks, ctx);
    return this.finish(t, p, t.write(p.write));
  }

  /** A call parsed into its computed write (throws INVALID_ARGUMENT for bad input). */
  private prepare(t: TabletPeer, req: rpb.MutateRowsRequestPB, rowsPb: rpb.RowMutationPB[] | undefined, requestId: bigint | undefined, waitForLocks: boolean, ctx?: { deadlineMonoMs: number }): PreparedCall {
    const request = requestTag(req, requestId);
    const rowKeys: string[] = [];
    const rows = parseRowMutations(t.meta, rowsPb, rowKeys);
    const cellBytesMax = this.deps.flags.get(ROW_CELL_BYTES_MAX);
    const p: PreparedCall = { rows, write: { ops: [] } };
    p.write = {
      ops: [],
      computed: {
        keys: rows.map((r) => r.key),
        rowKeys,
        readsRows: readsRows(rows),
        compute: (current) => {
          const ev = evaluateRowMutations(rows, current, cellBytesMax);
          p.results = ev.results;
          return ev.ops;
        },
      },
      heldLocks: rows.map((r) => r.lock),
      ...(rows.some((r) => r.unlockAfter) ? { unlockAfter: rows.map((r) => r.unlockAfter === true) } : {}),
      waitForLocks,
      deadlineMonoMs: this.deadline(ctx),
      ...(request ? { request } : {}),
    };
    return p;
  }

  /** The call's answer once its write settled: applied or not, and the new values it computed. */
  private async finish(t: TabletPeer, p: PreparedCall, written: Promise<bigint>): Promise<CallAnswer> {
    const ht = await written;
    if (ht === 0n) return { applied: false, writeHt: 0n, results: [] };
    // A resent copy of a request applied before: its new values are the row's at its entry's time.
    const results = p.results ?? (await this.readBack(t, p.rows, ht));
    return { applied: true, writeHt: ht, results: p.rows.map((_r, i) => resultPb(results[i]!)) };
  }

  private async readBack(t: TabletPeer, rows: RowMutation[], ht: bigint): Promise<Array<Map<number, Primitive>>> {
    const wanted = rows.map(resultColumns);
    if (wanted.every((w) => w.length === 0)) return rows.map(() => new Map());
    const r = await t.read(
      rows.map((x) => x.key),
      { readHt: ht },
    );
    return rows.map((_, i) => {
      const row: Row | undefined = r.rows[i];
      return new Map(wanted[i]!.map((c) => [c, row?.columns.get(c) ?? null]));
    });
  }

  async lockRow(req: rpb.LockRowRequestPB, ctx?: { deadlineMonoMs: number }): Promise<rpb.RowLockResponsePB> {
    const t = this.tablet(req.tabletId, req.schemaVersion, req.propagatedHt);
    const more = req.more ?? [];
    if (more.length === 0) return this.grantPb(await this.lockOne(t, req, req.wait === true, ctx));
    // Coalesced lockRow calls (never waiting ones): each on its own.
    return this.coalescedLocks(t, [req, ...more], (i) => this.lockOne(t, i, false, ctx));
  }

  private async lockOne(t: TabletPeer, i: rpb.LockRowItemPB, wait: boolean, ctx?: { deadlineMonoMs: number }): Promise<LockGrant> {
    const key = keyFromPb(t.meta, i.key);
    const leaseMs = i.leaseMs || this.deps.flags.get(ROW_LOCK_LEASE_MS);
    return t.rowLockOps().lock(key, { leaseMs, holder: i.holder ?? '', ...(i.lockId ? { lockId: i.lockId } : {}), wait, deadlineMonoMs: this.deadline(ctx) });
  }

  async rowLock(req: rpb.RowLockRequestPB): Promise<rpb.RowLockResponsePB> {
    const t = this.tablet(req.tabletId, req.schemaVersion, req.propagatedHt);
    const more = req.more ?? [];
    if (more.length === 0) return this.grantPb(await this.heldOne(t, req));
    return this.coalescedLocks(t, [req, ...more], (i) => this.heldOne(t, i));
  }

  private async heldOne(t: TabletPeer, i: rpb.RowLockItemPB): Promise<LockGrant> {
    const key = keyFromPb(t.meta, i.key);
    const lockId = i.lockId ?? '';
    if (i.action === 'RENEW') return t.rowLockOps().renew(key, lockId, i.leaseMs || this.deps.flags.get(ROW_LOCK_LEASE_MS));
    if (i.action === 'UNLOCK') return t.rowLockOps().unlock(key, lockId);
    throw invalid(`unknown row lock action '${String(i.action)}' (RENEW | UNLOCK)`);
  }

  /** Several lock calls of one request, each handled (and failing) on its own, all at once. */
  private async coalescedLocks<I>(t: TabletPeer, items: I[], one: (i: I) => Promise<LockGrant>): Promise<rpb.RowLockResponsePB> {
    if (items.length > WRITE_ITEMS_MAX) throw invalid(`row lock request has ${items.length} calls; at most ${WRITE_ITEMS_MAX}`);
    // Not the (ready) leader: the whole request goes elsewhere, as one (not one answer per call).
    t.checkLeader();
    const settled = await Promise.allSettled(items.map((i) => one(i)));
    const out: rpb.RowLockResultPB[] = settled.map((r) => {
      if (r.status === 'fulfilled') return { lockId: r.value.lockId, token: BigInt(r.value.token), expiresHt: r.value.expiresHt, leaseMs: r.value.leaseMs };
      const e = DbError.from(r.reason);
      return { ...e.toResult(), detailsJson: detailsJson(e.details) };
    });
    return { propagatedHt: this.deps.clock.now(), items: out };
  }

  private grantPb(g: LockGrant): rpb.RowLockResponsePB {
    return { lockId: g.lockId, token: BigInt(g.token), expiresHt: g.expiresHt, leaseMs: g.leaseMs, propagatedHt: this.deps.clock.now() };
  }

  register(server: RpcServer, m: RowMethods): void {
    server.handle(m.mutateRows, (r, ctx) => this.mutateRows(r, ctx));
    server.handle(m.lockRow, (r, ctx) => this.lockRow(r, ctx));
    server.handle(m.rowLock, (r) => this.rowLock(r));
  }
}
