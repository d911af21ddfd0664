/**
 * The tserver console's /percolator page and its JSON twin /api/v1/percolator (docs/percolator.md,
 * Consoles): for each replica here of a Percolator table (one with the hidden _pc_seq/_pc_state
 * columns), the rows it holds, the Percolator locks in them (and the oldest lock's age by its
 * writer's wall clock) and the observers' notify backlog (rows with a notify hint). Read from the
 * replica's own data at its latest time, up to PERCOLATOR_ROWS_MAX rows per tablet (`truncated` says so).
 */
import { NOTIFY_COLUMN, STATE_COLUMN, stateLock } from '../common/percolator-layout';
import { htmlTable, type WebServer } from '../rpc';
import type { TabletManager } from './tablet-manager';

/** Rows a request reads per tablet at most (a lab console, not an analytics job). */
export const PERCOLATOR_ROWS_MAX = 100_000;
const ROWS_PER_SCAN = 1_000;

export interface PercolatorTabletJson {
  table: string;
  tabletId: string;
  leader: boolean;
  rows: number;
  locks: number;
  /** Age of the oldest lock by its writer's wall clock (ms; null without locks). */
  oldestLockAgeMs: number | null;
  notifyBacklog: number;
  truncated: boolean;
}

export async function percolatorJson(manager: TabletManager, nowMs: () => number = Date.now): Promise<{ tablets: PercolatorTabletJson[] }> {
  const tablets: PercolatorTabletJson[] = [];
  for (const p of manager.list()) {
    const cols = p.meta.schema.columns;
    const state = cols.find((c) => c.name === STATE_COLUMN);
    if (!state) continue;
    const notify = cols.find((c) => c.name === NOTIFY_COLUMN);
    const t: PercolatorTabletJson = { table: p.meta.tableName, tabletId: p.tabletId, leader: p.isLeaderReady(), rows: 0, locks: 0, oldestLockAgeMs: null, notifyBacklog: 0, truncated: false };
    const readHt = p.hybridNow();
    let startKey: Uint8Array | undefined;
    try {
      for (;;) {
        const r = await p.scanVisible(readHt, ROWS_PER_SCAN, startKey);
        for (const row of r.rows) {
          t.rows++;
          const lock = stateLock(row.columns.get(state.id));
          if (lock) {
            t.locks++;
            const age = Math.max(0, nowMs() - lock.wallMs);
            t.oldestLockAgeMs = Math.max(t.oldestLockAgeMs ?? 0, age);
          }
          const n = notify ? row.columns.get(notify.id) : undefined;
          if (n !== undefined && n !== null) t.notifyBacklog++;
        }
        if (!r.resumeKey) break;
        if (t.rows >= PERCOLATOR_ROWS_MAX) {
          t.truncated = true;
          break;
        }
        startKey = r.resumeKey;
      }
    } catch {
      // A replica that is not RUNNING (bootstrapping, being deleted) has nothing to show yet.
      continue;
    }
    tablets.push(t);
  }
  return { tablets };
}

export function registerPercolatorPages(d: { web: WebServer; manager: () => TabletManager }): void {
  d.web.route('/percolator', {
    title: 'Percolator locks and notify backlog',
    nav: 'Percolator',
    json: () => percolatorJson(d.manager()),
    html: async () => {
      const { tablets } = await percolatorJson(d.manager());
      if (tablets.length === 0) return '<p>No replica of a Percolator table on this tserver (tables made with client.percolator.createTable: docs/percolator.md).</p>';
      return htmlTable(
        ['Table', 'Tablet', 'Replica', 'Rows', 'Locks', 'Oldest lock age ms', 'Notify backlog'],
        tablets.map((t) => [t.table, t.tabletId, t.leader ? 'leader' : 'follower', `${t.rows}${t.truncated ? '+' : ''}`, t.locks, t.oldestLockAgeMs ?? '', t.notifyBacklog]),
        { id: 'percolator' },
      );
    },
  });
}
