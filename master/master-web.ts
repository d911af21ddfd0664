/**
 * The master console (port 7000): /tablet-servers, /tables, /table?name=|id=, /masters, each with its
 * JSON twin of docs/architecture.md §Contracts, plus the kit's /varz /metrics /logs /healthz /threadz. A follower master's pages
 * redirect to the leader's console (meta refresh); its JSON twins answer NOT_THE_LEADER with the
 * leader's addresses, so scripts go to the leader too.
 */
import { DbError, ErrorCode } from '../common/errors';
import { bytesCell, escapeHtml, htmlTable, link, raw, type Cell, type OverviewItem, type WebRequest, type WebServer } from '../rpc';
import { registerApplyTimeline } from './apply-timeline';
import { checkFamilies, familyAttributes } from '../common/column-families';
import type { CatalogManager } from './catalog-manager';
import type { MasterInfo } from './master-info';
import { partitionText, splitHistoryHtml } from './split-web';

export interface MasterWebDeps {
  web: WebServer;
  manager: CatalogManager;
  /** Every master with role (the leader's web address resolved when reachable). */
  masters(): Promise<MasterInfo[]>;
  isLeader(): boolean;
  leaderWebAddress(): Promise<string>;
}

// Long by design (docs/conventions.md): a table of the console's pages, each a few lines; splitting it by size would only scatter the table.
export function registerMasterPages(d: MasterWebDeps): void {
  const { web, manager } = d;

  const leaderOnlyJson = async <T>(f: () => T): Promise<T> => {
    if (!d.isLeader()) {
      const w = await d.leaderWebAddress().catch(() => '');
      throw new DbError(ErrorCode.NOT_THE_LEADER, `this master is not the leader${w ? `; ask http://${w}` : ''}`, { leaderWebAddress: w });
    }
    return f();
  };
  const leaderOnlyHtml = async (req: WebRequest, f: () => string): Promise<string> => {
    if (d.isLeader()) return f();
    const w = await d.leaderWebAddress().catch(() => '');
    if (!w) return '<p>This master is not the leader and no leader is known yet. Reload in a moment.</p>';
    const url = `http://${w}${req.path}${req.query.toString() ? `?${req.query.toString()}` : ''}`;
    return `<meta http-equiv="refresh" content="0; url=${escapeHtml(url)}"><p>This master is a follower; the leader's console is ${link(url, url).toString()}.</p>`;
  };

  web.setOverview(async () => {
    const leader = d.isLeader();
    const leaderWeb = leader ? web.address : await d.leaderWebAddress().catch(() => '');
    const items: OverviewItem[] = [
      { key: 'role', label: 'This master', value: leader ? 'LEADER' : 'FOLLOWER' },
      { key: 'leaderWebAddress', label: 'Leader master console', value: leaderWeb, html: leaderWeb ? link(`http://${leaderWeb}`, leaderWeb) : 'none known yet' },
    ];
    if (!leader) return items;
    const c = manager.clusterSummary();
    const warn = (n: number, text: string): Cell => (n > 0 ? raw(`<b style="color:#b00">${escapeHtml(text)}</b>`) : text);
    items.push(
      { key: 'tabletServersAlive', label: 'Tablet servers alive', value: c.tabletServersAlive, html: link('/tablet-servers', String(c.tabletServersAlive)) },
      { key: 'tabletServersDead', label: 'Tablet servers dead', value: c.tabletServersDead, html: warn(c.tabletServersDead, String(c.tabletServersDead)) },
      { key: 'userTables', label: 'Tables', value: c.userTables, html: link('/tables', String(c.userTables)) },
      { key: 'systemTables', label: 'System tables (transaction status)', value: c.systemTables },
      { key: 'tablets', label: 'Tablets', value: c.tablets },
      { key: 'tabletsWithoutLeader', label: 'Tablets without a leader', value: c.tabletsWithoutLeader, html: warn(c.tabletsWithoutLeader, String(c.tabletsWithoutLeader)) },
      { key: 'tabletsShortOfReplicas', label: 'Tablets short of live replicas', value: c.tabletsShortOfReplicas, html: warn(c.tabletsShortOfReplicas, String(c.tabletsShortOfReplicas)) },
    );
    return items;
  });

  web.route('/tablet-servers', {
    title: 'Tablet Servers',
    nav: 'Tablet Servers',
    json: () => leaderOnlyJson(() => ({ tabletServers: manager.tabletServersJson() })),
    html: (req) =>
      leaderOnlyHtml(req, () =>
        htmlTable(
          ['RPC address', 'Console', 'UUID', 'Alive', 'Last heartbeat', 'Tablets', 'Leaders', 'Zone', 'RSS'],
          manager
            .tabletServersJson()
            .map((t) => [
              t.rpcAddress,
              t.webAddress ? link(`http://${t.webAddress}`, t.webAddress) : '',
              t.uuid,
              t.alive ? 'ALIVE' : raw('<b style="color:#b00">DEAD</b>'),
              t.lastHeartbeatMsAgo < 0 ? 'never (since this master leads)' : `${t.lastHeartbeatMsAgo} ms ago`,
              t.tablets,
              t.leaders,
              t.placementZone,
              bytesCell(t.rssBytes),
            ]),
          { id: 'tablet-servers' },
        ),
      ),
  });

  web.route('/tables', {
    title: 'Tables',
    nav: 'Tables',
    json: () => leaderOnlyJson(() => ({ tables: manager.listTables().map((t) => ({ id: t.id, name: t.name, numTablets: t.numTablets, replicationFactor: t.replicationFactor, schemaVersion: t.schemaVersion ?? 0 })) })),
    html: (req) =>
      leaderOnlyHtml(req, () =>
        htmlTable(
          ['Name', 'Id', 'Tablets', 'Replication factor', 'Hash columns', 'Range columns'],
          manager.listTables().map((t) => [link(`/table?id=${t.id}`, t.name), t.id, t.numTablets, t.replicationFactor, t.schema.hashColumns.join(', '), t.schema.rangeColumns.join(', ')]),
          { id: 'tables' },
        ),
      ),
  });

  const tableOf = (req: WebRequest) => {
    const id = req.query.get('id') ?? '';
    const name = req.query.get('name') ?? '';
    if (!id && !name) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'give ?name=TABLE or ?id=TABLE_ID');
    return manager.findTable(id ? { id } : { name });
  };
  web.route('/table', {
    title: 'Table',
    json: (req) => leaderOnlyJson(() => manager.locationsJson(tableOf(req))),
    html: (req) =>
      leaderOnlyHtml(req, () => {
        const t = tableOf(req);
        const loc = manager.locationsJson(t);
        const cols = htmlTable(
          ['Column', 'Id', 'Type', 'Nullable', 'Key', 'Family'],
          t.schema.columns.map((c) => [c.name, c.id, c.type, c.nullable, t.schema.hashColumns.includes(c.name) ? 'HASH' : t.schema.rangeColumns.includes(c.name) ? 'RANGE' : '', c.family ?? 'default']),
          { id: 'columns' },
        );
        // Column families and their retention (docs/cells.md).
        const families = htmlTable(['Family', 'Retention'], checkFamilies(t.schema.families, t.schema.columns).map((f) => [f.name, familyAttributes(f)]), { id: 'families' });
        const tablets = htmlTable(
          ['Tablet', 'Partition', 'RaftConfig (leader first)'],
          loc.tablets.map((x) => [
            x.tabletId,
            partitionText(x.partition),
            raw([...x.replicas].sort((a, b) => Number(b.role === 'LEADER') - Number(a.role === 'LEADER')).map((r) => `${r.role === 'LEADER' ? '<b>LEADER</b>' : escapeHtml(r.role)}: <span title="${escapeHtml(r.tserverUuid)}">${escapeHtml(r.rpcAddress || r.tserverUuid)}</span>`).join('<br>')),
          ]),
          { id: 'tablets' },
        );
        const version = `<p>Schema version ${loc.schemaVersion}: served by the leaders of ${loc.tabletsOnSchemaVersion} of ${loc.tablets.length} tablets</p>`;
        const timeline = `<p>${link(`/apply-timeline?table=${encodeURIComponent(t.name)}`, 'Apply timeline of this table').toString()}: IntentsDB and RegularDB sizes of every replica over the last minutes.</p>`;
        return `<h2>${escapeHtml(t.name)} <small>${escapeHtml(t.id)}</small></h2>${version}${timeline}${cols}<h2>Column families</h2>${families}<h2>Tablets</h2>${tablets}${splitHistoryHtml(t)}`;
      }),
  });

  registerApplyTimeline({ web, manager, isLeader: d.isLeader });

  web.route('/masters', {
    title: 'Masters',
    nav: 'Masters',
    json: async () => ({ masters: await d.masters() }),
    html: async () =>
      htmlTable(
        ['UUID', 'RPC address', 'Console', 'Role', 'Term'],
        (await d.masters()).map((m) => [m.uuid, m.rpcAddress, m.webAddress ? link(`http://${m.webAddress}`, m.webAddress) : '', m.role, m.term]),
        { id: 'masters' },
      ),
  });
}
