/** The tserver console's transaction pages: /txn-applies (apply lag per replica) and /transactions. */
import { DbError, ErrorCode } from '../common/errors';
import { htmlTable, link } from '../rpc';
import type { TabletPeer } from './tablet/tablet-peer';
import { summarizeApplies, type ApplyLagLog, type ApplyLagRecord } from './tablet/apply-lag-log';
import type { TServerWebDeps } from './tserver-web-deps';

/** Rows of the applies page's newest applies and commit points (?count=N, up to NEWEST_APPLIES_MAX). */
const NEWEST_APPLIES_SHOWN = 30;
const NEWEST_APPLIES_MAX = 1_000;
/** /txn-applies and, when the server runs transactions, /transactions. */
export function registerTxnPages(d: TServerWebDeps): void {
  registerAppliesPage(d);
  registerTransactionsPage(d);
}

function registerAppliesPage(d: TServerWebDeps): void {
  const { web } = d;
  // Apply lag per replica (tablet/apply-lag-log.ts): ?since=MICROS gives the applies finished since.
  // The page: each tablet replica's applies of the last ?seconds (default 60), then the newest ones.
  web.route('/txn-applies', {
    title: 'Transaction applies',
    nav: 'Applies',
    html: async (req) => {
      const secondsText = req.query.get('seconds') ?? '60';
      const seconds = Number(secondsText);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) throw new DbError(ErrorCode.INVALID_ARGUMENT, `seconds must be a whole number from 1 to 86400, got '${secondsText}'`);
      const nowMicros = Date.now() * 1000;
      const since = nowMicros - seconds * 1_000_000;
      const { tablets } = await d.tabletsJson();
      const info = new Map(tablets.map((t) => [t.tabletId, t]));
      const peers = d.manager().list();
      const ms = (x: number | undefined): string => (x === undefined ? '' : x.toFixed(1));
      const at = (micros: number): string => new Date(micros / 1000).toISOString();
      const perTablet = htmlTable(
        ['Table', 'Tablet', 'Role', `Applies (last ${seconds} s)`, 'Lag p50 ms', 'Lag p99 ms', 'Lag max ms', 'Newest apply (s ago)', 'Its lag ms'],
        peers.map((p) => {
          const s = summarizeApplies(p.applyLag.since(since));
          const t = info.get(p.tabletId);
          return [t?.table ?? '', link(`/tablet?id=${encodeURIComponent(p.tabletId)}`, p.tabletId), t?.role ?? '', s.applies, ms(s.p50Ms), ms(s.p99Ms), ms(s.maxMs), s.last ? ((nowMicros - s.last.appliedMicros) / 1e6).toFixed(1) : '', ms(s.last?.lagMs)];
        }),
        { id: 'apply-lag' },
      );
      const countText = req.query.get('count') ?? String(NEWEST_APPLIES_SHOWN);
      const count = Number(countText);
      if (!Number.isInteger(count) || count < 1 || count > NEWEST_APPLIES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `count must be a whole number from 1 to ${NEWEST_APPLIES_MAX}, got '${countText}'`);
      // The newest records of one log kind across this server's tablet replicas, newest first, whatever
      // their age: a person comes back to the page minutes after the apply the blog waits for.
      const newest = (log: (p: TabletPeer) => ApplyLagLog): Array<{ tabletId: string; r: ApplyLagRecord }> =>
        peers
          .flatMap((p) => log(p).since(0).slice(-count).map((r) => ({ tabletId: p.tabletId, r })))
          .sort((a, b) => b.r.appliedMicros - a.r.appliedMicros)
          .slice(0, count);
      const applies = htmlTable(
        ['Table', 'Tablet', 'Role', 'Transaction', 'Commit time', 'APPLY entry applied (ms after commit)', 'Intents in RegularDB (ms after commit: the lag)', 'Applied (s ago)'],
        newest((p) => p.applyLag).map(({ tabletId, r }) => [info.get(tabletId)?.table ?? '', tabletId, info.get(tabletId)?.role ?? '', r.txnId, at(r.commitMicros), r.markedMicros === undefined ? '' : ms((r.markedMicros - r.commitMicros) / 1000), ms(r.lagMs), ((nowMicros - r.appliedMicros) / 1e6).toFixed(1)]),
        { id: 'applies' },
      );
      const commits = htmlTable(
        ['Status tablet', 'Transaction', 'Commit time', 'COMMITTED record applied (ms after commit)'],
        newest((p) => p.commitPoints).map(({ tabletId, r }) => [tabletId, r.txnId, at(r.commitMicros), ms(r.lagMs)]),
        { id: 'commit-points' },
      );
      return (
        `<p>After a transaction commits, each replica of each participant tablet moves its intents from IntentsDB into RegularDB when it applies the tablet's APPLY entry, on its own schedule (<code>TEST_inject_sleep_before_applying_intents_ms</code> delays one). Lag = commit hybrid time → that replica's intents in RegularDB, by this server's clock. Per tablet replica: the last ${seconds} s (<code>?seconds=N</code>); newest applies: the last ${count} whatever their age (<code>?count=N</code>); JSON: <a href="/api/v1/txn-applies?since=${Math.floor(since)}">/api/v1/txn-applies?since=MICROS</a>.</p>` +
        `<h2>Newest applies</h2>${applies}<h2>Per tablet replica (last ${seconds} s)</h2>${perTablet}<h2>Commit points (this server's status tablet replicas)</h2>${commits}`
      );
    },
    json: (req) => {
      const since = Number(req.query.get('since') ?? '0');
      if (!Number.isFinite(since) || since < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `since must be microseconds since the epoch, got '${req.query.get('since') ?? ''}'`);
      return Promise.resolve({
        uuid: d.uuid,
        applies: d
          .manager()
          .list()
          .flatMap((p) => p.applyLag.since(since).map((r) => ({ tabletId: p.tabletId, ...r }))),
        // Status tablets' replicas: when each applied a transaction's COMMITTED record (its commit point).
        commits: d
          .manager()
          .list()
          .flatMap((p) => p.commitPoints.since(since).map((r) => ({ tabletId: p.tabletId, txnId: r.txnId, commitMicros: r.commitMicros, committedMicros: r.appliedMicros }))),
      });
    },
  });
}

function registerTransactionsPage(d: TServerWebDeps): void {
  const { web } = d;
  const txns = d.transactions;
  if (txns) {
    web.route('/transactions', {
      title: 'Transactions',
      nav: 'Transactions',
      json: () => txns(),
      html: async () => {
        const t = await txns();
        const coord = htmlTable(
          ['Status tablet', 'Role', 'Transaction', 'Status', 'Isolation', 'Start HT', 'Commit HT', 'Age (ms)', 'Last heartbeat (ms ago)', 'Participants', 'Not acknowledged'],
          t.coordinators.flatMap((c) =>
            c.transactions.map((x) => [c.tabletId, c.role, x.txnId, x.replicated ? x.status : `${x.status} (leader only, not yet replicated)`, x.isolation, String(x.startHt), String(x.commitHt), x.ageMs, x.lastHeartbeatMsAgo, x.participants.join(', '), x.unacked.join(', ')]),
          ),
          { id: 'coordinator-transactions' },
        );
        const part = htmlTable(
          ['Tablet', 'Table', 'Role', 'Transaction', 'Status tablet', 'Isolation', 'Start HT', 'Intents', 'Applying at commit HT'],
          t.participants.flatMap((p) => p.transactions.map((x) => [p.tabletId, p.table, p.role, x.txnId, x.statusTablet, x.isolation, x.startHt, x.intentCount, x.applyingCommitHt])),
          { id: 'participant-transactions' },
        );
        const memory = htmlTable(
          ['Status tablet', 'Role', 'Covers transactions started from HT (history floor)', 'Answers: never committed', 'Answers: committed and forgotten', 'Answers left indefinite (started earlier)'],
          t.coordinators.map((c) => [c.tabletId, c.role, c.forgottenCommits.historyFloorHt === '0' ? '0 (history never collected: all)' : c.forgottenCommits.historyFloorHt, c.forgottenCommits.neverCommitted, c.forgottenCommits.committedAnswers, c.forgottenCommits.uncovered]),
          { id: 'coordinator-memory' },
        );
        return `<h2>Coordinators (status tablets)</h2>${coord}<h3>Lost commit answers: what each status tablet replica can prove</h3>${memory}<h2>Participants (provisional records per tablet)</h2>${part}`;
      },
    });
  }
}
