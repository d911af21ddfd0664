/**
 * The catalog as a pure state machine: apply(state, op) returns the next state and, when the op is
 * refused, an error. Every master applies the same committed ops in the same order, so the checks
 * here (not the leader's pre-checks) decide: two CreateTable of one name racing through Raft end with
 * exactly one table, on every master.
 */
import { ErrorCode } from '../common/errors';
import { applySplitOp } from './split-catalog';
import { schemaVersionOf, type CatalogOp, type CatalogState, type TableInfo, type TabletInfo } from './catalog-types';

export interface ApplyOutcome {
  state: CatalogState;
  /** Set when the op was refused; the state is then unchanged. */
  error?: { code: ErrorCode; message: string };
}

export function emptyCatalog(): CatalogState {
  return { tables: new Map(), tablets: new Map(), tservers: new Map() };
}

function refuse(state: CatalogState, code: ErrorCode, message: string): ApplyOutcome {
  return { state, error: { code, message } };
}

export function tableByName(state: CatalogState, name: string): TableInfo | undefined {
  for (const t of state.tables.values()) if (t.name === name) return t;
  return undefined;
}

export function applyCatalogOp(state: CatalogState, op: CatalogOp): ApplyOutcome {
  switch (op.type) {
    case 'createTable': {
      if (tableByName(state, op.table.name)) return refuse(state, ErrorCode.ALREADY_EXISTS, `table ${op.table.name} already exists`);
      if (state.tables.has(op.table.id)) return refuse(state, ErrorCode.ALREADY_EXISTS, `table id ${op.table.id} already exists`);
      for (const t of op.tablets) {
        if (state.tablets.has(t.id)) return refuse(state, ErrorCode.ALREADY_EXISTS, `tablet id ${t.id} already exists`);
        if (t.tableId !== op.table.id) return refuse(state, ErrorCode.INVALID_ARGUMENT, `tablet ${t.id} belongs to another table`);
      }
      const tables = new Map(state.tables);
      tables.set(op.table.id, op.table);
      const tablets = new Map(state.tablets);
      for (const t of op.tablets) tablets.set(t.id, t);
      return { state: { ...state, tables, tablets } };
    }
    case 'dropTable': {
      const table = state.tables.get(op.tableId);
      if (!table) return refuse(state, ErrorCode.TABLE_NOT_FOUND, `table id ${op.tableId} not found`);
      const tables = new Map(state.tables);
      tables.delete(op.tableId);
      const tablets = new Map(state.tablets);
      for (const id of table.tabletIds) tablets.delete(id);
      return { state: { ...state, tables, tablets } };
    }
    case 'alterTable': {
      const table = state.tables.get(op.tableId);
      if (!table) return refuse(state, ErrorCode.TABLE_NOT_FOUND, `table id ${op.tableId} not found`);
      if (schemaVersionOf(table) !== op.fromVersion) return refuse(state, ErrorCode.TRY_AGAIN, `table ${table.name} was altered meanwhile (schema version ${schemaVersionOf(table)}, not ${op.fromVersion}); alter it again`);
      const other = tableByName(state, op.name);
      if (other && other.id !== table.id) return refuse(state, ErrorCode.ALREADY_EXISTS, `table ${op.name} already exists`);
      const tables = new Map(state.tables);
      tables.set(table.id, { ...table, name: op.name, schema: op.schema, schemaVersion: op.fromVersion + 1, nextColumnId: op.nextColumnId, ...(op.durability ? { durability: op.durability } : {}) });
      return { state: { ...state, tables } };
    }
    case 'setReplicas': {
      const t = state.tablets.get(op.tabletId);
      if (!t) return refuse(state, ErrorCode.TABLET_NOT_FOUND, `tablet ${op.tabletId} not found`);
      const uuids = new Set(op.replicas.map((r) => r.tserverUuid));
      if (uuids.size !== op.replicas.length || op.replicas.length === 0) {
        return refuse(state, ErrorCode.INVALID_ARGUMENT, `tablet ${op.tabletId}: replicas must be distinct and non-empty`);
      }
      const next: TabletInfo = { ...t, replicas: op.replicas.map((r) => ({ ...r })) };
      const tablets = new Map(state.tablets);
      tablets.set(t.id, next);
      return { state: { ...state, tablets } };
    }
    case 'registerTServer': {
      const prev = state.tservers.get(op.tserver.uuid);
      if (prev && prev.rpcAddress === op.tserver.rpcAddress && prev.webAddress === op.tserver.webAddress) return { state };
      const tservers = new Map(state.tservers);
      tservers.set(op.tserver.uuid, { ...op.tserver });
      return { state: { ...state, tservers } };
    }
    case 'registerSplit':
    case 'completeSplit':
    case 'abortSplit': {
      const r = applySplitOp(state, op);
      return r.error ? refuse(state, r.error.code, r.error.message) : { state: r.state };
    }
    case 'reserveTimestamps': {
      if (!/^[0-9]{1,30}$/.test(op.bound)) return refuse(state, ErrorCode.INVALID_ARGUMENT, `oracle bound ${op.bound} is not a decimal timestamp`);
      if (BigInt(op.bound) <= oracleBoundOf(state)) return { state };
      return { state: { ...state, oracleBoundTs: op.bound } };
    }
  }
}

/** The timestamp oracle's persisted high-water mark (0 before the first reservation). */
export function oracleBoundOf(state: CatalogState): bigint {
  return BigInt(state.oracleBoundTs ?? '0');
}

/** Tablets of a table in partition order. */
export function tabletsOf(state: CatalogState, table: TableInfo): TabletInfo[] {
  return table.tabletIds.map((id) => state.tablets.get(id)).filter((t): t is TabletInfo => t !== undefined);
}
