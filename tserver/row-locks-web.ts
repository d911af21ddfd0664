/**
 * The tserver console's /locks page and its JSON twin /api/v1/locks: the row locks every tablet
 * replica here holds (row, holder, fencing token, lease left by this server's hybrid clock), and the
 * tserver_row_locks metric (docs/rows.md). Every replica shows the locks it applied; the leader's
 * view is the one writes are checked against.
 */
import type { DocKey, Primitive } from '../docdb';
import { htmlTable } from '../rpc';
import type { Metrics } from '../rpc';
import type { WebServer } from '../rpc';
import type { TabletManager } from './tablet-manager';
import { leaseLeftMs } from './tablet/row-locks';

export interface RowLocksWebDeps {
  web: WebServer;
  metrics: Metrics;
  manager: () => TabletManager;
}

export interface RowLockJson {
  table: string;
  tabletId: string;
  leader: boolean;
  row: string;
  holder: string;
  lockId: string;
  token: number;
  leaseLeftMs: number;
}

function valueText(v: Primitive): string {
  if (v instanceof Uint8Array) return `0x${Buffer.from(v).toString('hex')}`;
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

/** A row key as people read it: (hash values; range values). */
export function keyText(k: DocKey): string {
  const hashed = k.hashed.map(valueText).join(', ');
  return k.range.length > 0 ? `(${hashed}; ${k.range.map(valueText).join(', ')})` : `(${hashed})`;
}

export function rowLocksJson(manager: TabletManager): { locks: RowLockJson[] } {
  const locks: RowLockJson[] = [];
  for (const p of manager.list()) {
    const now = p.hybridNow();
    const leader = p.isLeaderReady();
    for (const l of p.rowLocks.list(now)) {
      locks.push({ table: p.meta.tableName, tabletId: p.tabletId, leader, row: keyText(l.key), holder: l.holder, lockId: l.lockId, token: l.token, leaseLeftMs: leaseLeftMs(l, now) });
    }
  }
  return { locks };
}

export function registerRowLockPages(d: RowLocksWebDeps): void {
  d.web.route('/locks', {
    title: 'Row locks',
    nav: 'Locks',
    json: () => rowLocksJson(d.manager()),
    html: () => {
      const { locks } = rowLocksJson(d.manager());
      return htmlTable(
        ['Table', 'Tablet', 'Replica', 'Row', 'Holder', 'Lock id', 'Fencing token', 'Lease left ms'],
        locks.map((l) => [l.table, l.tabletId, l.leader ? 'leader' : 'follower', l.row, l.holder, l.lockId, l.token, l.leaseLeftMs]),
        { id: 'locks' },
      );
    },
  });
  d.metrics.gauge(
    'tserver_row_locks',
    'Row locks per tablet replica (docs/rows.md): held now (kind="held"), granted / renewed / released / expired since the replica opened, locks ended by a leader change, restart or split ("ended_by_leader_change"), writes refused because another holder has the row ("rejected_locked") or carrying a lock that no longer holds it ("rejected_fenced"), writers that waited for a lock ("waits", of which gave up at their deadline: "waits_timed_out"), waiting now ("waiting")',
    ['tablet_id', 'kind'],
    (g) => {
      g.reset();
      for (const p of d.manager().list()) {
        const t = p.rowLocks;
        const m = t.metrics;
        const kinds: Array<[string, number]> = [
          ['held', t.list(p.hybridNow()).length],
          ['granted', m.granted],
          ['renewed', m.renewed],
          ['released', m.released],
          ['expired', m.expired],
          ['ended_by_leader_change', m.endedByLeaderChange],
          ['rejected_locked', m.rejectedLocked],
          ['rejected_fenced', m.rejectedFenced],
          ['waits', m.waits],
          ['waits_timed_out', m.waitsTimedOut],
          ['unlocks_after_write', m.unlocksAfterWrite],
          ['waiting', t.waitingNow()],
        ];
        for (const [kind, v] of kinds) g.set({ tablet_id: p.tabletId, kind }, v);
      }
    },
  );
}
