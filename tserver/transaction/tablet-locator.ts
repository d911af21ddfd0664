/**
 * Finds the leader of any tablet by id for server-to-server transaction RPCs (coordinator →
 * participant UpdateTransaction, participant → status tablet GetTransactionStatus / Abort).
 *
 * Replica addresses come from the master (ListTables with system tables, then GetTableLocations per
 * table until the tablet shows up; all of a table's tablets are cached at once). Calls go to the
 * last known leader first and follow NOT_THE_LEADER hints; a miss reloads from the master. Every
 * loop is bounded by LOCATE_ATTEMPTS_MAX.
 */
import { TRANSACTIONS_TABLE } from '../../common/system-tables';
import { DbError, ErrorCode } from '../../common/errors';
import type { Logger } from '../../common/log';
import type { GetTableLocationsRequestPB, GetTableLocationsResponsePB, ListTablesRequestPB, ListTablesResponsePB } from '../../rpc';

/** Attempts (replicas tried, hints followed, reloads) of one call. */
const LOCATE_ATTEMPTS_MAX = 12;
/** Tablets whose replica lists are cached (cleared when exceeded). */
const CACHED_TABLETS_MAX = 100_000;
/** Tables one master lookup walks at most. */
const TABLES_SCANNED_MAX = 10_000;
const MASTER_TIMEOUT_MS = 5_000;

export interface TabletLocatorDeps {
  masters(): string[];
  listTables(address: string, req: ListTablesRequestPB, timeoutMs: number): Promise<ListTablesResponsePB>;
  getTableLocations(address: string, req: GetTableLocationsRequestPB, timeoutMs: number): Promise<GetTableLocationsResponsePB>;
  /** Addresses of local knowledge (this server's own replicas' Raft peers), tried before the master. */
  localReplicas(tabletId: string): string[];
  log: Logger;
}

function retryableHere(e: unknown): boolean {
  if (!(e instanceof DbError)) return true; // transport errors: try another replica
  if (e.code === ErrorCode.TABLET_SPLIT) return false; // every replica of a split tablet answers so
  return e.code === ErrorCode.NOT_THE_LEADER || e.code === ErrorCode.LEADER_NOT_READY || e.code === ErrorCode.TABLET_NOT_FOUND || e.code === ErrorCode.SERVICE_UNAVAILABLE || e.code === ErrorCode.TIMED_OUT || e.retryable;
}

export class TabletLocator {
  private readonly replicas = new Map<string, string[]>();
  private readonly leaders = new Map<string, string>();
  private masterIdx = 0;

  constructor(private readonly deps: TabletLocatorDeps) {}

  /** Run `fn` against the tablet's leader. */
  async call<T>(tabletId: string, fn: (address: string) => Promise<T>): Promise<T> {
    // Made only when needed: a DbError captures a stack trace, and this runs for every UpdateTransaction.
    let lastErr: unknown;
    const tried = new Set<string>();
    let reloaded = false;
    for (let attempt = 0; attempt < LOCATE_ATTEMPTS_MAX; attempt++) {
      const addr = this.pick(tabletId, tried);
      if (!addr) {
        if (reloaded) break;
        reloaded = true;
        tried.clear();
        await this.reload(tabletId).catch((e: unknown) => (lastErr = e));
        continue;
      }
      tried.add(addr);
      try {
        const r = await fn(addr);
        this.leaders.set(tabletId, addr);
        return r;
      } catch (e) {
        lastErr = e;
        if (!retryableHere(e)) throw e;
        if (this.leaders.get(tabletId) === addr) this.leaders.delete(tabletId);
        const hint = e instanceof DbError ? e.details['leaderHint'] : undefined;
        if (typeof hint === 'string' && hint && !tried.has(hint)) this.leaders.set(tabletId, hint);
        else if (e instanceof DbError && e.code === ErrorCode.LEADER_NOT_READY) await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw lastErr ?? new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tabletId}: no replica known`);
  }

  private pick(tabletId: string, tried: Set<string>): string | undefined {
    const l = this.leaders.get(tabletId);
    if (l && !tried.has(l)) return l;
    const cands = [...(this.replicas.get(tabletId) ?? []), ...this.deps.localReplicas(tabletId)];
    return cands.find((a) => a && !tried.has(a));
  }

  private async reload(tabletId: string): Promise<void> {
    const masters = this.deps.masters();
    if (masters.length === 0) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'no master addresses to locate tablets');
    let lastErr: unknown;
    for (let i = 0; i < masters.length * 2; i++) {
      const addr = masters[this.masterIdx % masters.length]!;
      try {
        const tables = await this.deps.listTables(addr, { includeSystem: true }, MASTER_TIMEOUT_MS);
        // The status tablets' table is looked up by name too (a master may hide system tables).
        const lookups: GetTableLocationsRequestPB[] = [{ name: TRANSACTIONS_TABLE }, ...(tables.tables ?? []).filter((t) => t.name !== TRANSACTIONS_TABLE).map((t) => ({ id: t.id ?? '' }))];
        for (const req of lookups.slice(0, TABLES_SCANNED_MAX)) {
          const loc = await this.deps.getTableLocations(addr, req, MASTER_TIMEOUT_MS).catch((e: unknown) => {
            if (e instanceof DbError && e.code === ErrorCode.TABLE_NOT_FOUND) return { tablets: [] };
            throw e;
          });
          if (this.replicas.size > CACHED_TABLETS_MAX) this.replicas.clear();
          let found = false;
          for (const tl of loc.tablets ?? []) {
            if (!tl.tabletId) continue;
            const reps = tl.replicas ?? [];
            this.replicas.set(tl.tabletId, reps.map((r) => r.rpcAddress ?? '').filter(Boolean));
            const leader = reps.find((r) => r.role === 'LEADER')?.rpcAddress;
            if (leader) this.leaders.set(tl.tabletId, leader);
            if (tl.tabletId === tabletId) found = true;
          }
          if (found) return;
        }
        throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${tabletId} is in no table the master knows`);
      } catch (e) {
        lastErr = e;
        if (e instanceof DbError && e.code === ErrorCode.TABLET_NOT_FOUND) throw e;
        this.masterIdx++;
      }
    }
    throw lastErr;
  }
}
