/**
 * The consoles as a person reads them (issue 59), over real processes: sizes in human units with the
 * exact bytes on hover and in the JSON twins, leaders by host:port, memory trackers naming each
 * tablet's table and replica role, the newest applies whatever their age, and the master's apply
 * timeline with its JSON twin — per tablet and node, the sizes and intents of an open transaction.
 * Bad parameters answer 400 with INVALID_ARGUMENT. Addresses 127.0.0.13-16.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { getJson, httpRequest } from '../../lab/console-http';
import { humanBytes } from '../../rpc/svg-chart';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

interface Row {
  tabletId: string;
  table: string;
  role: string;
  leaderUuid: string;
  leaderAddress: string;
  intentsdb: { memtableBytes: number; intentCount: number };
  regulardb: { memtableBytes: number };
}
interface Tracker {
  id: string;
  currentBytes: number;
  table?: string;
  role?: string;
  children?: Tracker[];
}
interface Timeline {
  nodes: Array<{ rpcAddress: string; error?: string }>;
  tablets: Array<{ tabletId: string; replicas: Array<{ rpcAddress: string; role: string; samples: number[][] }> }>;
}

describe('readable consoles', () => {
  it('consoles: human sizes with exact bytes, leaders by host:port, trackers with table and role, newest applies of any age, the apply timeline and its JSON twin', async () => {
    // Leader balancing off: the test compares each replica's role across pages read one after another,
    // and the balancer moving a leader in between would make them differ (it did under load).
    cluster = await ProcCluster.create({ hostBase: 13, masters: 1, tservers: 3, masterFlags: ['--enable_load_balancing=false'], tserverFlags: ['--heartbeat_interval_ms=200'] });
    await cluster.startAll();
    client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
    await client.createTable({ name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
    const tsWeb = `http://${cluster.tservers[0]!.webAddress}`;
    const masterWeb = `http://${cluster.masters[0]!.webAddress}`;
    const tserverAddresses = cluster.tservers.map((t) => t.rpcAddress);

    // An open transaction: its intents on every replica.
    const txn = await client.beginTransaction({ isolation: 'snapshot', timeoutMs: 60_000 });
    await txn.table('demo').upsertMany(Array.from({ length: 30 }, (_, i) => ({ id: BigInt(i), value: 'v'.repeat(20_000) })), { timeoutMs: 30_000 });
    const rows = await waitFor('intents on every demo replica of tserver 0', 20_000, async () => {
      const b = (await getJson(`${tsWeb}/api/v1/tablets`)) as { tablets: Row[] };
      const demo = b.tablets.filter((t) => t.table === 'demo');
      return demo.length === 3 && demo.every((t) => t.intentsdb.intentCount > 0 && t.leaderAddress) ? demo : undefined;
    });
    for (const r of rows) expect(tserverAddresses).toContain(r.leaderAddress);
    // The page shows each size in human units with its exact bytes in the title.
    const page = (await httpRequest(`${tsWeb}/tablets`)).body;
    for (const r of rows) expect(page).toContain(`<span class="bytes" title="${r.intentsdb.memtableBytes} bytes">${humanBytes(r.intentsdb.memtableBytes)}</span>`);
    expect(page).toContain(rows[0]!.leaderAddress);

    // Memory trackers: each tablet's tracker names its table and this replica's role.
    const tree = (await getJson(`${tsWeb}/api/v1/mem-trackers`)) as Tracker;
    const tabletTrackers = tree.children!.find((c) => c.id === 'Tablets')!.children!;
    for (const r of rows) expect(tabletTrackers.find((c) => c.id === `tablet-${r.tabletId}`)).toMatchObject({ table: 'demo', role: r.role });

    // The master's timeline: 3 nodes answering, each demo tablet with 3 replicas whose latest sample holds the intents.
    const tl = await waitFor('the apply timeline to show the intents on all 9 replicas', 20_000, async () => {
      const j = (await getJson(`${masterWeb}/api/v1/apply-timeline?table=demo`)) as Timeline;
      const last = j.tablets.flatMap((t) => t.replicas.map((r) => r.samples[r.samples.length - 1]));
      return j.nodes.length === 3 && j.tablets.length === 3 && last.length === 9 && last.every((s) => s !== undefined && s[5]! > 0 && s[1]! > 0) ? j : undefined;
    });
    expect(tl.nodes.every((n) => n.error === undefined && tserverAddresses.includes(n.rpcAddress))).toBe(true);
    expect((await httpRequest(`${masterWeb}/apply-timeline?table=demo`)).body).toContain('<svg');

    // After the commit: the newest applies are listed even when older than the per-replica window.
    await txn.commit({ timeoutMs: 30_000 });
    const appliedAt = await waitFor('tserver 0 to record its applies', 20_000, async () => {
      const a = (await getJson(`${tsWeb}/api/v1/txn-applies?since=0`)) as { applies: Array<{ txnId: string; appliedMicros: number }> };
      const mine = a.applies.filter((x) => x.txnId === txn.txnId);
      return mine.length === 3 ? Math.max(...mine.map((x) => x.appliedMicros)) : undefined;
    });
    await waitFor('the applies to be more than 1 s old', 10_000, () => Date.now() * 1000 - appliedAt > 1_100_000);
    const applies = (await httpRequest(`${tsWeb}/txn-applies?seconds=1&count=5`)).body;
    const appliesTable = /<table id="applies">[\s\S]*?<\/table>/.exec(applies)?.[0] ?? '';
    expect(appliesTable.split(txn.txnId).length - 1).toBe(3); // its 3 tablets' applies, older than ?seconds=1
    expect(applies).toContain('the last 5 whatever their age');

    // Bad parameters: 400 INVALID_ARGUMENT; an unknown table: 404.
    for (const [url, code] of [
      [`${masterWeb}/api/v1/apply-timeline`, 'INVALID_ARGUMENT'],
      [`${masterWeb}/api/v1/apply-timeline?table=demo&minutes=99`, 'INVALID_ARGUMENT'],
      [`${masterWeb}/api/v1/apply-timeline?table=nope`, 'TABLE_NOT_FOUND'],
      [`${tsWeb}/api/v1/size-history?since_ms=soon`, 'INVALID_ARGUMENT'],
      [`${tsWeb}/txn-applies?count=0`, 'INVALID_ARGUMENT'],
    ] as const) {
      const r = await httpRequest(url);
      expect(r.status, url).toBe(code === 'TABLE_NOT_FOUND' ? 404 : 400);
      expect(r.body, url).toContain(code);
    }
  }, 120_000);
});
