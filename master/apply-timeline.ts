/**
 * The master's live apply timeline (/apply-timeline?table=demo): per tablet and per node, IntentsDB
 * and RegularDB memtable and SST bytes and the intents held over the last minutes, read from every
 * live tserver's size history (/api/v1/size-history) at each request. The page refreshes its charts
 * itself (a small inline script fetches the fragment again), so the whole intents-apply experiment —
 * intents on every node while open, RegularDB growing on n1 and n2 at commit, n0 after its delay — is
 * watched on one page. The JSON twin carries the same samples.
 */
import { DbError, ErrorCode } from '../common/errors';
import { bytesCell, escapeHtml, htmlTable, NODE_COLOURS, nodeStrokeWidth, raw, svgStepChart, TextPage, type StepSeries, type WebRequest, type WebServer } from '../rpc';
import type { CatalogManager } from './catalog-manager';

const MINUTES_DEFAULT = 3;
const MINUTES_MAX = 10;
/** One tserver's history must answer within this, or the node shows as not answering. */
const HISTORY_FETCH_TIMEOUT_MS = 2_000;
const REFRESH_MS = 2_000;
const CHART_WIDTH_PX = 640;
const CHART_HEIGHT_PX = 230;

type Sample = [number, number, number, number, number, number];

export interface TimelineJson {
  table: string;
  minutes: number;
  nowMs: number;
  fields: ['atMs', 'intentsMemtableBytes', 'intentsSstBytes', 'regularMemtableBytes', 'regularSstBytes', 'intents'];
  nodes: Array<{ label: string; uuid: string; rpcAddress: string; webAddress: string; nodeName: string; error?: string }>;
  tablets: Array<{ tabletId: string; partition: { start: number; end: number }; replicas: Array<{ node: string; rpcAddress: string; role: string; samples: Sample[] }> }>;
}

interface HistoryAnswer {
  nodeName?: string;
  tablets?: Array<{ tabletId: string; role: string; samples: Sample[] }>;
}

export interface ApplyTimelineDeps {
  web: WebServer;
  manager: CatalogManager;
  isLeader(): boolean;
}

async function fetchHistory(webAddress: string, table: string, sinceMs: number): Promise<HistoryAnswer> {
  const res = await fetch(`http://${webAddress}/api/v1/size-history?table=${encodeURIComponent(table)}&since_ms=${sinceMs}`, { signal: AbortSignal.timeout(HISTORY_FETCH_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as HistoryAnswer;
}

async function timelineJson(d: ApplyTimelineDeps, req: WebRequest): Promise<TimelineJson> {
  if (!d.isLeader()) throw new DbError(ErrorCode.NOT_THE_LEADER, 'this master is not the leader; open the leader master\'s /apply-timeline');
  const table = req.query.get('table') ?? '';
  if (!table) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'give ?table=NAME (e.g. /apply-timeline?table=demo)');
  const minutesText = req.query.get('minutes') ?? String(MINUTES_DEFAULT);
  const minutes = Number(minutesText);
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MINUTES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `minutes must be a whole number from 1 to ${MINUTES_MAX}, got '${minutesText}'`);
  const loc = d.manager.locationsJson(d.manager.findTable({ name: table }));
  const nowMs = Date.now();
  const servers = d.manager.tabletServersJson().filter((t) => t.alive && t.webAddress);
  const answers = await Promise.all(servers.map(async (t) => ({ t, a: await fetchHistory(t.webAddress, table, nowMs - minutes * 60_000).catch((e: unknown) => ({ error: String(e) })) })));
  const nodes: TimelineJson['nodes'] = answers
    .map(({ t, a }) => {
      const nodeName = 'nodeName' in a ? (a.nodeName ?? '') : '';
      return { label: nodeName ? `${nodeName} ${t.rpcAddress}` : t.rpcAddress, uuid: t.uuid, rpcAddress: t.rpcAddress, webAddress: t.webAddress, nodeName, ...('error' in a ? { error: String(a.error) } : {}) };
    })
    .sort((a, b) => a.label.localeCompare(b.label));
  const byUuid = new Map(answers.map(({ t, a }) => [t.uuid, 'tablets' in a ? a : undefined]));
  const tablets = loc.tablets.map((tb) => ({
    tabletId: tb.tabletId,
    partition: tb.partition,
    replicas: tb.replicas
      .map((r) => {
        const h = byUuid.get(r.tserverUuid)?.tablets?.find((x) => x.tabletId === tb.tabletId);
        return { node: nodes.find((n) => n.uuid === r.tserverUuid)?.label ?? r.rpcAddress, rpcAddress: r.rpcAddress, role: r.role, samples: h?.samples ?? [] };
      })
      .sort((a, b) => a.node.localeCompare(b.node)),
  }));
  return { table, minutes, nowMs, fields: ['atMs', 'intentsMemtableBytes', 'intentsSstBytes', 'regularMemtableBytes', 'regularSstBytes', 'intents'], nodes, tablets };
}

/** Memtable (solid) and SST (dashed) bytes of one database, a colour per node. */
function dbChart(j: TimelineJson, tablet: TimelineJson['tablets'][number], db: 'IntentsDB' | 'RegularDB'): string {
  const [mem, sst] = db === 'IntentsDB' ? [1, 2] : [3, 4];
  const series: StepSeries[] = [];
  for (const r of tablet.replicas) {
    const k = Math.max(0, j.nodes.findIndex((n) => n.label === r.node));
    const colour = NODE_COLOURS[k % NODE_COLOURS.length]!;
    const strokeWidth = nodeStrokeWidth(k, j.nodes.length);
    const name = r.node.split(' ')[0]!;
    series.push({ name: `${name} memtable`, colour, strokeWidth, points: r.samples.map((s) => [s[0], s[mem]!] as const) });
    series.push({ name: `${name} SST`, colour, strokeWidth, dashed: true, points: r.samples.map((s) => [s[0], s[sst]!] as const) });
  }
  // Both databases of a tablet on one scale: a RegularDB of a few hundred bytes must look empty beside 33 MiB of intents.
  const yMaxAtLeast = Math.max(0, ...tablet.replicas.flatMap((r) => r.samples.flatMap((s) => [s[1]!, s[2]!, s[3]!, s[4]!])));
  return svgStepChart(series, { title: `${db}`, width: CHART_WIDTH_PX, height: CHART_HEIGHT_PX, yUnit: 'bytes', xStartMs: j.nowMs - j.minutes * 60_000, xEndMs: j.nowMs, xAgo: true, yMaxAtLeast });
}

/** The part of the page the script refreshes: per tablet, the two charts and the latest figures. */
function fragment(j: TimelineJson): string {
  const parts: string[] = [`<p class="updated">Updated ${escapeHtml(new Date(j.nowMs).toISOString().slice(11, 19))} UTC · the last ${j.minutes} min (<code>?minutes=N</code>, up to ${MINUTES_MAX}) · one sample a second per replica</p>`];
  const silent = j.nodes.filter((n) => n.error);
  if (silent.length) parts.push(`<p style="color:#b00">Not answering: ${silent.map((n) => escapeHtml(`${n.label} (${n.error})`)).join(', ')}</p>`);
  for (const t of j.tablets) {
    const last = (r: TimelineJson['tablets'][number]['replicas'][number]): Sample | undefined => r.samples[r.samples.length - 1];
    const leader = t.replicas.find((r) => r.role === 'LEADER');
    const now = htmlTable(
      ['Node', 'Role', 'Intents', 'IntentsDB memtable', 'IntentsDB SST', 'RegularDB memtable', 'RegularDB SST'],
      t.replicas.map((r) => {
        const s = last(r);
        return [r.node, r.role === 'LEADER' ? raw('<b>LEADER</b>') : r.role, s?.[5] ?? '', s ? bytesCell(s[1]) : '', s ? bytesCell(s[2]) : '', s ? bytesCell(s[3]) : '', s ? bytesCell(s[4]) : ''];
      }),
    );
    parts.push(
      `<section class="tablet" data-tablet="${escapeHtml(t.tabletId)}"><h2>Tablet ${escapeHtml(t.tabletId)} <small>[0x${t.partition.start.toString(16).padStart(4, '0')}, 0x${t.partition.end.toString(16).padStart(4, '0')}) · leader ${escapeHtml(leader?.node ?? 'none')}</small></h2>` +
        `<div class="charts">${dbChart(j, t, 'IntentsDB')}${dbChart(j, t, 'RegularDB')}</div>${now}</section>`,
    );
  }
  return parts.join('\n');
}

const SCRIPT = `(function(){var el=document.getElementById('timeline');var u=new URL(location.href);u.searchParams.set('fragment','1');
function tick(){fetch(u.toString(),{cache:'no-store'}).then(function(r){if(!r.ok)throw new Error('HTTP '+r.status);return r.text();})
.then(function(h){el.innerHTML=h;el.setAttribute('data-refreshes',String(Number(el.getAttribute('data-refreshes')||'0')+1));})
.catch(function(e){el.setAttribute('data-error',String(e));}).finally(function(){setTimeout(tick,${REFRESH_MS});});}
setTimeout(tick,${REFRESH_MS});})();`;

export function registerApplyTimeline(d: ApplyTimelineDeps): void {
  d.web.route('/apply-timeline', {
    title: 'Apply timeline',
    nav: 'Apply timeline',
    json: (req) => timelineJson(d, req),
    html: async (req) => {
      if (!req.query.get('table') && d.isLeader()) {
        const tables = d.manager.listTables().map((t) => `<li><a href="/apply-timeline?table=${encodeURIComponent(t.name)}">${escapeHtml(t.name)}</a></li>`);
        return `<p>Pick a table (<code>?table=NAME</code>):</p><ul>${tables.join('')}</ul>`;
      }
      const j = await timelineJson(d, req);
      if (req.query.get('fragment') === '1') return new TextPage(fragment(j), 'text/html; charset=utf-8');
      const q = `table=${encodeURIComponent(j.table)}&minutes=${j.minutes}`;
      return (
        `<p>Table <b>${escapeHtml(j.table)}</b>: each replica's IntentsDB and RegularDB memtable (solid) and SST (dashed) bytes, one colour per node. While a transaction is open its provisional records fill IntentsDB on every node; at commit each replica applies them to RegularDB on its own schedule (TEST_inject_sleep_before_applying_intents_ms delays one). JSON: <a href="/api/v1/apply-timeline?${q}">/api/v1/apply-timeline?${escapeHtml(q)}</a>.</p>` +
        `<style>.charts{display:flex;flex-wrap:wrap;gap:8px}.charts svg{max-width:100%;height:auto}</style>` +
        `<div id="timeline" data-refreshes="0">${fragment(j)}</div><script>${SCRIPT}</script>`
      );
    },
  });
}
