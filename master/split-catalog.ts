/**
 * The catalog side of tablet splitting (docs/splitting.md), pure: registering a split (the two
 * children join the catalog, the parent keeps its place until they run) and completing it (the
 * children replace the parent in the table's partition order, the parent leaves the catalog and is
 * remembered in the table's split history). Every master applies the same ops in the same order.
 */
import { ErrorCode } from '../common/errors';
import { SPLIT_HISTORY_MAX, type CatalogOp, type CatalogState, type TabletInfo } from './catalog-types';

type SplitOp = Extract<CatalogOp, { type: 'registerSplit' | 'completeSplit' | 'abortSplit' }>;

export interface SplitApply {
  state: CatalogState;
  error?: { code: ErrorCode; message: string };
}

function refused(state: CatalogState, code: ErrorCode, message: string): SplitApply {
  return { state, error: { code, message } };
}

export function applySplitOp(state: CatalogState, op: SplitOp): SplitApply {
  const parent = state.tablets.get(op.parentId);
  if (!parent) return refused(state, ErrorCode.TABLET_NOT_FOUND, `tablet ${op.parentId} not found`);
  const table = state.tables.get(parent.tableId);
  if (!table) return refused(state, ErrorCode.TABLE_NOT_FOUND, `table of tablet ${op.parentId} not found`);
  if (op.type === 'registerSplit') {
    if (parent.splitChildren) return refused(state, ErrorCode.ALREADY_EXISTS, `tablet ${op.parentId} is already being split`);
    if (op.children.length !== 2) return refused(state, ErrorCode.INVALID_ARGUMENT, 'a split has two children');
    for (const c of op.children) {
      if (state.tablets.has(c.id)) return refused(state, ErrorCode.ALREADY_EXISTS, `tablet id ${c.id} already exists`);
      if (c.tableId !== parent.tableId) return refused(state, ErrorCode.INVALID_ARGUMENT, `tablet ${c.id} belongs to another table`);
    }
    const tablets = new Map(state.tablets);
    tablets.set(parent.id, { ...parent, splitChildren: op.children.map((c) => c.id) });
    for (const c of op.children) tablets.set(c.id, { ...c, parentId: parent.id, splitDepth: (parent.splitDepth ?? 0) + 1 });
    return { state: { ...state, tablets } };
  }
  const children = parent.splitChildren;
  if (!children) return refused(state, ErrorCode.INVALID_ARGUMENT, `tablet ${op.parentId} has no registered split`);
  if (op.type === 'abortSplit') {
    const tablets = new Map(state.tablets);
    const { splitChildren: _dropped, ...rest } = parent;
    tablets.set(parent.id, rest);
    for (const c of children) tablets.delete(c);
    return { state: { ...state, tablets } };
  }
  const at = table.tabletIds.indexOf(parent.id);
  if (at < 0) return refused(state, ErrorCode.TABLET_NOT_FOUND, `tablet ${op.parentId} is no longer part of table ${table.name}`);
  const tabletIds = [...table.tabletIds.slice(0, at), ...children, ...table.tabletIds.slice(at + 1)];
  const first = state.tablets.get(children[0]!);
  const splitAt = first?.partition.keyEnd ?? String(first?.partition.end ?? '');
  const history = [...(table.splitHistory ?? []), { parentId: parent.id, children: [...children], at: splitAt, atMs: op.atMs }].slice(-SPLIT_HISTORY_MAX);
  const tables = new Map(state.tables);
  tables.set(table.id, { ...table, tabletIds, numTablets: tabletIds.length, splitHistory: history });
  const tablets = new Map(state.tablets);
  tablets.delete(parent.id);
  return { state: { ...state, tables, tablets } };
}

/** A child tablet whose parent is still in the catalog (its split not completed yet). */
export function splittingParentOf(state: CatalogState, t: TabletInfo): TabletInfo | undefined {
  return t.parentId ? state.tablets.get(t.parentId) : undefined;
}

/**
 * A split's children keep their leaders where they are this long after the split completed (and
 * while it is not completed): the leader balancer leaves them alone. On the parent leader's tserver
 * the children campaign at once and clients are sent there; a leader move right after the split
 * would add an election to the split's hold for the very writes it just released.
 */
export const SPLIT_CHILD_SETTLE_MS = 30_000;

/** Tablets the leader balancer leaves alone: children of splits not completed, or completed within SPLIT_CHILD_SETTLE_MS. */
export function settlingSplitChildren(state: CatalogState, nowWallMs: number): Set<string> {
  const out = new Set<string>();
  for (const t of state.tables.values()) for (const h of t.splitHistory ?? []) if (nowWallMs - h.atMs < SPLIT_CHILD_SETTLE_MS) for (const id of h.children) out.add(id);
  for (const t of state.tablets.values()) if (splittingParentOf(state, t)) out.add(t.id);
  return out;
}
