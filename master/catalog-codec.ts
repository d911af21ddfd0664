/**
 * Bytes of sys-catalog Raft entries (one CatalogOp each) and snapshots (the whole catalog). JSON with
 * a version tag: the catalog is small, and a person can read it with `strings` when debugging. What
 * is read back is checked for shape; a mismatch is CORRUPTION (the replica stops, it never guesses).
 */
import { DbError, ErrorCode } from '../common/errors';
import type { CatalogOp, CatalogState, TableInfo, TabletInfo, TServerAddress } from './catalog-types';

const OP_VERSION = 1;
const SNAPSHOT_VERSION = 1;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

function corrupt(what: string): DbError {
  return new DbError(ErrorCode.CORRUPTION, `sys catalog: ${what}`);
}

function parseJson(b: Uint8Array, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(dec.decode(b));
  } catch (e) {
    throw corrupt(`${what} is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw corrupt(`${what} is not an object`);
  return v as Record<string, unknown>;
}

export function encodeCatalogOp(op: CatalogOp): Uint8Array {
  return enc.encode(JSON.stringify({ v: OP_VERSION, op }));
}

const OP_TYPES = new Set(['createTable', 'dropTable', 'alterTable', 'setReplicas', 'registerTServer', 'reserveTimestamps', 'registerSplit', 'completeSplit', 'abortSplit']);

export function decodeCatalogOp(b: Uint8Array): CatalogOp {
  const o = parseJson(b, 'entry');
  if (o['v'] !== OP_VERSION) throw corrupt(`entry version ${String(o['v'])} is not ${OP_VERSION}`);
  const op = o['op'];
  if (typeof op !== 'object' || op === null) throw corrupt('entry has no op');
  const type = (op as Record<string, unknown>)['type'];
  if (typeof type !== 'string' || !OP_TYPES.has(type)) throw corrupt(`unknown op type ${String(type)}`);
  // Written by a master of this same code from typed values; the type tag fixes the rest of the shape.
  return op as CatalogOp;
}

export function encodeCatalog(state: CatalogState): Uint8Array {
  return enc.encode(
    JSON.stringify({ v: SNAPSHOT_VERSION, tables: [...state.tables.values()], tablets: [...state.tablets.values()], tservers: [...state.tservers.values()], oracleBoundTs: state.oracleBoundTs ?? '0' }),
  );
}

export function decodeCatalog(b: Uint8Array): CatalogState {
  const o = parseJson(b, 'snapshot');
  if (o['v'] !== SNAPSHOT_VERSION) throw corrupt(`snapshot version ${String(o['v'])} is not ${SNAPSHOT_VERSION}`);
  const tables = o['tables'];
  const tablets = o['tablets'];
  const tservers = o['tservers'];
  if (!Array.isArray(tables) || !Array.isArray(tablets) || !Array.isArray(tservers)) throw corrupt('snapshot lacks tables/tablets/tservers');
  const bound = o['oracleBoundTs'] ?? '0';
  if (typeof bound !== 'string' || !/^[0-9]{1,30}$/.test(bound)) throw corrupt('snapshot oracleBoundTs is not a decimal timestamp');
  return {
    oracleBoundTs: bound,
    tables: new Map((tables as TableInfo[]).map((t) => [t.id, t])),
    tablets: new Map((tablets as TabletInfo[]).map((t) => [t.id, t])),
    tservers: new Map((tservers as TServerAddress[]).map((t) => [t.uuid, t])),
  };
}
