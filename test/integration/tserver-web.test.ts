/**
 * The tserver console over real loopback processes (docs/architecture.md §Consoles, §Contracts): 1 master + 3 tservers, a
 * 3-tablet table with some rows, then every page and JSON twin a script relies on.
 * Addresses 127.0.0.40-42 (or 127.0.0.1 with shifted ports).
 */
import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { getJson, httpRequest, postFlag } from '../../lab/console-http';
import type { Rpcz } from '../../rpc/rpcz';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

interface TabletRow {
  tabletId: string;
  table: string;
  partition: { start: number; end: number };
  state: string;
  role: string;
  term: number;
  leaderUuid: string;
  commitIndex: number;
  appliedIndex: number;
  regulardb: { memtableBytes: number; sstBytes: number };
  intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
}
interface MemNode {
  id: string;
  currentBytes: number;
  peakBytes: number;
  children?: MemNode[];
}

describe('tserver console', () => {
  it('tserver console: tablets, tablet detail, mem-trackers, metrics, flags, health, logs and transactions show the same facts', async () => {
    cluster = await ProcCluster.create({ hostBase: 40, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    await cl.startAll();
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 20_000 });
    await client.createTable({ name: 'webdemo', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    const rows = Array.from({ length: 300 }, (_, i) => ({ id: BigInt(i), v: `value-${i}-${'x'.repeat(100)}` }));
    await client.table('webdemo').upsertMany(rows, { timeoutMs: 30_000 });
    expect(await client.table('webdemo').get({ id: 7n })).toEqual({ id: 7n, v: rows[7]!.v });

    const web = `http://${cl.tservers[0]!.webAddress}`;
    // /api/v1/tablets: docs/architecture.md §Contracts shape; every replica applied what was written.
    const tablets = await waitFor('3 tablets with applied rows on tserver 0', 20_000, async () => {
      const b = (await getJson(`${web}/api/v1/tablets`)) as { tablets: TabletRow[] };
      const mine = b.tablets.filter((t) => t.table === 'webdemo');
      return mine.length === 3 && mine.every((t) => t.appliedIndex >= 2 && t.regulardb.memtableBytes > 0) ? mine : undefined;
    });
    for (const t of tablets) {
      expect(Object.keys(t)).toEqual(expect.arrayContaining(['tabletId', 'table', 'partition', 'state', 'role', 'term', 'leaderUuid', 'commitIndex', 'appliedIndex', 'regulardb', 'intentsdb']));
      expect(t.intentsdb).toEqual({ memtableBytes: expect.any(Number), sstBytes: expect.any(Number), intentCount: 0 });
      expect(t.commitIndex).toBeGreaterThanOrEqual(t.appliedIndex);
    }
    // The home page's overview (/api/v1): this server's replicas and leaders, as /api/v1/tablets lists them.
    // (Read again until both reads agree on the leaders: the leader balancer may move one in between.)
    const { all, home } = await waitFor('the overview and /api/v1/tablets to agree on the leaders', 10_000, async () => {
      const all = ((await getJson(`${web}/api/v1/tablets`)) as { tablets: TabletRow[] }).tablets;
      const home = (await getJson(`${web}/api/v1`)) as { kind: string; overview: Record<string, unknown> };
      return home.overview['leaders'] === all.filter((t) => t.role.toUpperCase() === 'LEADER').length ? { all, home } : undefined;
    });
    expect(home.kind).toBe('tserver');
    expect(home.overview).toMatchObject({ uuid: expect.any(String), rpcAddress: cl.tservers[0]!.rpcAddress, tablets: all.length, tabletsNotRunning: 0, intents: 0 });
    expect((await httpRequest(`${web}/`)).body).toContain('Tablet replicas');
    const html = await httpRequest(`${web}/tablets`);
    expect(html.status).toBe(200);
    expect(html.body).toContain(tablets[0]!.tabletId);
    expect(html.body).toContain('webdemo');

    // /api/v1/tablet?id=: the Raft config names three voters, exactly one LEADER, each with an address.
    const t0 = tablets[0]!;
    const detail = await waitFor('a leader in the tablet detail', 10_000, async () => {
      const d = (await getJson(`${web}/api/v1/tablet?id=${t0.tabletId}`)) as { raftConfig: Array<{ uuid: string; role: string; rpcAddress: string }>; frontier: { regular: { index: number } } };
      return d.raftConfig.filter((r) => r.role === 'LEADER').length === 1 ? d : undefined;
    });
    expect(detail.raftConfig).toHaveLength(3);
    expect(detail.raftConfig.map((r) => r.rpcAddress).sort()).toEqual(cl.tservers.map((t) => t.rpcAddress).sort());
    expect(detail.frontier.regular.index).toBeGreaterThan(0);
    // RocksDB's background work of both databases (real RocksDB here: counters from its statistics),
    // in the detail, in /api/v1/tablets and on the tablet page.
    const zeroOrMore = { flushes: expect.any(Number), compactions: expect.any(Number), flushCpuSeconds: expect.any(Number), compactionCpuSeconds: expect.any(Number), stallSeconds: expect.any(Number) };
    expect((detail as unknown as { background: unknown }).background).toMatchObject({ regulardb: zeroOrMore, intentsdb: zeroOrMore });
    expect((all.find((t) => t.tabletId === t0.tabletId) as unknown as { background: unknown }).background).toMatchObject({ regulardb: zeroOrMore, intentsdb: zeroOrMore });
    expect((await httpRequest(`${web}/tablet?id=${t0.tabletId}`)).body).toMatch(/RocksDB background work since open[^<]*<\/t[dh]>\s*<td>\d+ \/ \d+ \(\d+ \/ \d+\) \/ \d+; \d+ \/ \d+ \(\d+ \/ \d+\) \/ \d+</);
    // The Raft log's fdatasyncs, counted and timed: in the detail, in /api/v1/tablets and on the tablet page.
    const wal = (detail as unknown as { wal: { fsyncs: number; syncMs: number; syncMaxMs: number; slowSyncs: number } }).wal;
    expect(wal.fsyncs).toBeGreaterThan(0);
    expect(wal.syncMaxMs).toBeGreaterThan(0);
    expect(wal.syncMs).toBeGreaterThanOrEqual(wal.syncMaxMs);
    expect(wal.slowSyncs).toBeGreaterThanOrEqual(0);
    expect(wal.slowSyncs).toBeLessThanOrEqual(wal.fsyncs);
    expect((all.find((t) => t.tabletId === t0.tabletId) as unknown as { wal: unknown }).wal).toMatchObject({ fsyncs: expect.any(Number), syncMs: expect.any(Number), syncMaxMs: expect.any(Number), slowSyncs: expect.any(Number) });
    expect((await httpRequest(`${web}/tablet?id=${t0.tabletId}`)).body).toMatch(/Raft log fdatasyncs since open[^<]*<\/t[dh]>\s*<td>[1-9]\d* \/ \d+ \(\d+\.\d\d\) \/ \d+ \/ \d+</);
    const missing = await httpRequest(`${web}/api/v1/tablet?id=no-such-tablet`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({ code: 'TABLET_NOT_FOUND' });
    // The visible-rows digest: a bad read time is a clear error; below the history floor (0 here) none is.
    for (const bad of ['yesterday', '-1', '18446744073709551616', '1e9']) {
      const r = await httpRequest(`${web}/api/v1/tablet-checksum?id=${t0.tabletId}&read_ht=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(JSON.parse(r.body), bad).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const sum = (await getJson(`${web}/api/v1/tablet-checksum?id=${t0.tabletId}&read_ht=now`)) as { visible: { readHt: string; rows: number; stable: boolean } };
    expect(BigInt(sum.visible.readHt)).toBeGreaterThan(0n);
    expect(sum.visible.rows).toBeGreaterThan(0);
    const old = (await getJson(`${web}/api/v1/tablet-checksum?id=${t0.tabletId}&read_ht=1`)) as { visible: { rows: number } };
    expect(old.visible.rows).toBe(0); // nothing was written at hybrid time 1

    // /api/v1/mem-trackers: server → Tablets → tablet-<id> → RegularDB / IntentsDB → MemTable.
    const mem = (await getJson(`${web}/api/v1/mem-trackers`)) as MemNode;
    const tabletsNode = mem.children!.find((c) => c.id === 'Tablets')!;
    const node = tabletsNode.children!.find((c) => c.id === `tablet-${t0.tabletId}`)!;
    const regular = node.children!.find((c) => c.id === 'RegularDB')!;
    expect(regular.children![0]!.id).toBe('MemTable');
    expect(regular.currentBytes).toBeGreaterThan(0);
    expect(regular.peakBytes).toBeGreaterThanOrEqual(regular.currentBytes);
    expect(node.children!.map((c) => c.id)).toEqual(['RegularDB', 'IntentsDB']);
    expect((await httpRequest(`${web}/mem-trackers`)).body).toContain(`tablet-${t0.tabletId}`);
    // server → log_cache → log_cache-<id>: the tablet's Raft entries in memory (it took writes).
    const logNode = mem.children!.find((c) => c.id === 'log_cache')!;
    const tabletLog = logNode.children!.find((c) => c.id === `log_cache-${t0.tabletId}`)!;
    expect(tabletLog.currentBytes).toBeGreaterThan(0);
    expect(logNode.currentBytes).toBe(logNode.children!.reduce((a, c) => a + c.currentBytes, 0));
    expect(mem.currentBytes).toBe(tabletsNode.currentBytes + logNode.currentBytes);

    // /prometheus-metrics: per-tablet memtable gauges (YugabyteDB names) and op counters.
    const prom = (await httpRequest(`${web}/prometheus-metrics`)).body;
    expect(prom).toMatch(new RegExp(`mem_tracker_RegularDB_MemTable\\{[^}]*tablet_id="${t0.tabletId}"[^}]*\\} [1-9]`));
    expect(prom).toMatch(/mem_tracker_IntentsDB_MemTable\{/);
    expect(prom).toMatch(new RegExp(`mem_tracker_log_cache\\{[^}]*tablet_id="${t0.tabletId}"[^}]*\\} [1-9]`));
    expect(prom).toMatch(/^log_cache_evicted_for_global_limit_bytes(\{[^}]*\})? 0$/m);
    // Op counters: every tserver exports them; the leaders of the table's tablets counted its writes.
    const allProm = await Promise.all(cl.tservers.map(async (t) => (await httpRequest(`http://${t.webAddress}/prometheus-metrics`)).body));
    expect(allProm.some((p) => /tserver_rpc_ops_total\{[^}]*method="Write"[^}]*\} [1-9]/.test(p))).toBe(true);
    expect(((await getJson(`${web}/metrics`)) as unknown[]).length).toBeGreaterThan(0);

    // Flags at run time: a runtime flag changes and /varz says so; an unknown flag is refused.
    expect(await postFlag(web, 'heartbeat_interval_ms', '300', false)).toEqual({ name: 'heartbeat_interval_ms', value: 300 });
    const varz = (await getJson(`${web}/api/v1/varz`)) as { flags: Array<{ name: string; value: unknown; changed: boolean }> };
    expect(varz.flags.find((f) => f.name === 'heartbeat_interval_ms')).toMatchObject({ value: 300, changed: true });
    await expect(postFlag(web, 'no_such_flag', '1', false)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

    const health = (await getJson(`${web}/api/v1/healthz`)) as { ok: boolean; kind: string; tablets: number; rpcConnections: { in: { open: number; closedUnansweredPing: number }; out: { open: number; closedUnansweredPing: number } } };
    expect(health).toMatchObject({ ok: true, kind: 'tserver' });
    expect(health.tablets).toBeGreaterThanOrEqual(3);
    // RPC connections: the other tservers and the client connect in; it connects out to the master and its peers.
    expect(health.rpcConnections.in.open).toBeGreaterThanOrEqual(1);
    expect(health.rpcConnections.out.open).toBeGreaterThanOrEqual(1);
    expect(health.rpcConnections.in.closedUnansweredPing + health.rpcConnections.out.closedUnansweredPing).toBe(0);
    const logs = (await getJson(`${web}/api/v1/logs`)) as { lines: string[] };
    expect(logs.lines.some((l) => l.includes('tserver started'))).toBe(true);

    // /api/v1/transactions: an open transaction shows on a coordinator (PENDING) and as intents on participants.
    const txn = await client.beginTransaction({ isolation: 'snapshot' });
    await txn.table('webdemo').upsert({ id: 5000n, v: 'in-txn' });
    type Txns = { coordinators: Array<{ transactions: Array<{ txnId: string; status: string }> }>; participants: Array<{ transactions: Array<{ txnId: string; intentCount: number }> }> };
    const views = await waitFor('the open transaction on a coordinator and a participant', 20_000, async () => {
      const all = (await Promise.all(cl.tservers.map((t) => getJson(`http://${t.webAddress}/api/v1/transactions`)))) as Txns[];
      const coord = all.flatMap((v) => v.coordinators.flatMap((c) => c.transactions)).find((x) => x.status === 'PENDING');
      const part = all.flatMap((v) => v.participants.flatMap((p) => p.transactions)).find((x) => x.intentCount > 0);
      return coord && part ? { coord, part } : undefined;
    });
    expect(views.part.txnId).toBe(views.coord.txnId);
    expect((await httpRequest(`${web}/transactions`)).body).toContain('Participants');
    const beforeCommitMicros = Date.now() * 1000;
    await txn.commit();

    // /api/v1/txn-applies: every replica of the participant tablet reports its own apply of it, with
    // a lag from the commit time; a bad ?since is a clear error.
    type Applies = { uuid: string; applies: Array<{ tabletId: string; txnId: string; commitMicros: number; appliedMicros: number; lagMs: number; markedMicros: number }> };
    const applies = await waitFor('the apply of the committed transaction on 3 replicas', 20_000, async () => {
      const all = (await Promise.all(cl.tservers.map((t) => getJson(`http://${t.webAddress}/api/v1/txn-applies?since=${beforeCommitMicros}`)))) as Applies[];
      const mine = all.flatMap((v) => v.applies.filter((a) => a.txnId === views.coord.txnId).map((a) => ({ ...a, uuid: v.uuid })));
      return new Set(mine.map((a) => a.uuid)).size === 3 ? mine : undefined;
    });
    // The transaction services' RPCs are counted like the tablet service's.
    const txnProm = (await Promise.all(cl.tservers.map(async (t) => (await httpRequest(`http://${t.webAddress}/prometheus-metrics`)).body))).join('\n');
    for (const m of ['CreateTransaction', 'CommitTransaction', 'UpdateTransaction']) expect(txnProm).toMatch(new RegExp(`tserver_rpc_ops_total\\{[^}]*method="${m}"[^}]*\\} [1-9]`));
    // The work counters the benchmark divides per operation: intents written, a synced RegularDB batch
    // (the sync before the applied intents are deleted: apply_cleanup_delay_ms after the apply), Raft
    // log fsyncs and Raft messages.
    expect(txnProm).toMatch(/tserver_docdb_write_ops\{[^}]*db="intentsdb"[^}]*op="put"[^}]*\} [1-9]/);
    await waitFor('a synced RegularDB batch (the apply clean-up)', 10_000, async () => {
      const body = (await Promise.all(cl.tservers.map(async (t) => (await httpRequest(`http://${t.webAddress}/prometheus-metrics`)).body))).join('\n');
      return /tserver_docdb_write_batches\{[^}]*db="regulardb"[^}]*synced="true"[^}]*\} [1-9]/.test(body) ? true : undefined;
    });
    expect(txnProm).toMatch(/tserver_log_fsyncs\{[^}]*tablet_id="[0-9a-f]+"[^}]*\} [1-9]/);
    expect(txnProm).toMatch(/tserver_log_sync_seconds\{[^}]*tablet_id="[0-9a-f]+"[^}]*\} (0\.\d*[1-9]|[1-9])/);
    expect(txnProm).toMatch(/tserver_log_slow_syncs\{[^}]*tablet_id="[0-9a-f]+"[^}]*\} \d/);
    expect(txnProm).toMatch(/tserver_raft_messages\{[^}]*direction="sent"[^}]*\} [1-9]/);
    // CPU by kind of thread (/proc): the event loop has worked; the other kinds are reported too.
    if (fs.existsSync('/proc/self/task')) {
      expect(txnProm).toMatch(/process_thread_cpu_seconds\{[^}]*kind="main"[^}]*\} (0\.\d*[1-9]|[1-9])/);
      for (const k of ['rocksdb', 'other']) expect(txnProm).toMatch(new RegExp(`process_thread_cpu_seconds\\{[^}]*kind="${k}"[^}]*\\} \\d`));
    } else process.stdout.write('SKIP process_thread_cpu_seconds checks: no /proc on this machine\n');
    // RPC connections: each tserver has clients (the other tservers, the test's client) and its own
    // connections out (the master, the other tservers); none was closed by keepalive here.
    expect(txnProm).toMatch(/rpc_connections\{[^}]*side="server"[^}]*kind="open"[^}]*\} [1-9]/);
    expect(txnProm).toMatch(/rpc_connections\{[^}]*side="client"[^}]*kind="open"[^}]*\} [1-9]/);
    expect(txnProm).not.toMatch(/rpc_connections\{[^}]*kind="closed_unanswered_ping"[^}]*\} [1-9]/);
    for (const side of ['server', 'client']) {
      expect(txnProm).toMatch(new RegExp(`rpc_calls_in_flight\\{[^}]*side="${side}"[^}]*\\} \\d+`));
      expect(txnProm).toMatch(new RegExp(`rpc_oldest_call_in_flight_seconds\\{[^}]*side="${side}"[^}]*\\} [\\d.e-]+`));
    }
    // /rpcz: the same connections with their calls. Every tserver has called the master (heartbeats);
    // the tservers leading what this test wrote answered its client, named by its pid; the master
    // answered every tserver, each named by its address.
    const zs = (await Promise.all(cl.tservers.map((t) => getJson(`http://${t.webAddress}/api/v1/rpcz`)))) as Rpcz[];
    for (const z of zs) {
      expect(z.outbound.find((c) => c.remote === cl.masterAddresses[0])).toMatchObject({ state: 'open', calls: expect.any(Number) });
      expect(z.outbound.find((c) => c.remote === cl.masterAddresses[0])!.calls).toBeGreaterThan(0);
      for (const c of [...z.inbound, ...z.outbound]) expect(c.inFlight.length).toBeLessThanOrEqual(c.callsInFlight);
    }
    const fromTest = zs.flatMap((z) => z.inbound.filter((c) => c.caller === `client pid ${process.pid}`));
    expect(fromTest.reduce((n, c) => n + c.calls, 0), "calls answered to this test's client").toBeGreaterThan(0);
    const mz = (await getJson(`http://${cl.masters[0]!.webAddress}/api/v1/rpcz`)) as Rpcz;
    const heartbeating = new Set(mz.inbound.filter((c) => c.calls > 0 && c.caller?.startsWith('tserver ')).map((c) => c.caller));
    expect([...heartbeating].sort(), 'tservers calling the master').toEqual(cl.tservers.map((t) => `tserver ${t.rpcAddress}`).sort());
    expect((await httpRequest(`${web}/rpcz`)).body).toContain('Outbound: calls this server waits on');
    // Per tablet replica, what Raft did while a log sync ran (may be 0 on a lightly loaded cluster).
    for (const kind of ['applied_entries', 'applied_saved_ms', 'sends']) expect(txnProm).toMatch(new RegExp(`tserver_raft_early\\{[^}]*tablet_id="[0-9a-f]+"[^}]*kind="${kind}"[^}]*\\} \\d+`));
    // The apply stage per tablet replica: entries and calls (every replica applied something), waits and run time.
    for (const kind of ['entries', 'batches']) expect(txnProm).toMatch(new RegExp(`tserver_raft_apply\\{[^}]*tablet_id="[0-9a-f]+"[^}]*kind="${kind}"[^}]*\\} [1-9]`));
    for (const kind of ['wait_ms', 'run_ms']) expect(txnProm).toMatch(new RegExp(`tserver_raft_apply\\{[^}]*tablet_id="[0-9a-f]+"[^}]*kind="${kind}"[^}]*\\} \\d+`));
    // RocksDB's background work per replica and database, from its own statistics (a small cluster
    // may not have flushed yet: the series are there, with numbers).
    for (const db of ['regulardb', 'intentsdb']) {
      for (const kind of ['flushes', 'flush_seconds', 'flush_cpu_seconds', 'compactions', 'compaction_seconds', 'compaction_cpu_seconds', 'stall_seconds']) {
        expect(txnProm).toMatch(new RegExp(`tserver_rocksdb_background\\{[^}]*tablet_id="[0-9a-f]+"[^}]*db="${db}"[^}]*kind="${kind}"[^}]*\\} \\d`));
      }
    }
    for (const a of applies) {
      expect(a.commitMicros).toBeGreaterThanOrEqual(beforeCommitMicros - 1_000_000);
      expect(a.appliedMicros).toBeGreaterThanOrEqual(a.commitMicros);
      expect(a.lagMs).toBeCloseTo((a.appliedMicros - a.commitMicros) / 1000, 3);
      // The replica applied the APPLY entry (intents start moving) between the two.
      expect(a.markedMicros).toBeGreaterThanOrEqual(a.commitMicros);
      expect(a.markedMicros).toBeLessThanOrEqual(a.appliedMicros);
    }
    expect(new Set(applies.map((a) => a.tabletId)).size).toBe(1);
    // Its status tablet's replicas report when each applied the COMMITTED record (the commit point):
    // after the commit time, before the first participant replica applied.
    type Commits = { uuid: string; commits: Array<{ tabletId: string; txnId: string; commitMicros: number; committedMicros: number }> };
    const commits = await waitFor('the commit point on 3 status replicas', 20_000, async () => {
      const all = (await Promise.all(cl.tservers.map((t) => getJson(`http://${t.webAddress}/api/v1/txn-applies?since=${beforeCommitMicros}`)))) as Commits[];
      const mine = all.flatMap((v) => v.commits.filter((c) => c.txnId === views.coord.txnId).map((c) => ({ ...c, uuid: v.uuid })));
      return new Set(mine.map((c) => c.uuid)).size === 3 ? mine : undefined;
    });
    expect(new Set(commits.map((c) => c.tabletId)).size).toBe(1);
    expect(commits[0]!.tabletId).not.toBe(applies[0]!.tabletId);
    for (const c of commits) {
      expect(c.commitMicros).toBe(applies[0]!.commitMicros);
      expect(c.committedMicros).toBeGreaterThanOrEqual(c.commitMicros);
    }
    expect(Math.min(...commits.map((c) => c.committedMicros))).toBeLessThanOrEqual(Math.min(...applies.map((a) => a.markedMicros)));
    // The page of the same facts: per tablet replica the applies of the last minute with their lag,
    // then the newest applies (this transaction's among them) and commit points.
    const page = await httpRequest(`${web}/txn-applies`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Per tablet replica');
    expect(page.body).toContain(applies[0]!.tabletId);
    const appliesHere = page.body.slice(page.body.indexOf('id="applies"'), page.body.indexOf('id="commit-points"'));
    expect(appliesHere).toContain(views.coord.txnId);
    expect((await httpRequest(`${web}/txn-applies?seconds=0`)).status).toBe(400);
    // The home page's overview counts this server's applies of the last minute, with the longest lag.
    const overview = ((await getJson(`${web}/api/v1`)) as { overview: { applies60s: { applies: number; maxLagMs: number } } }).overview.applies60s;
    const mineHere = applies.filter((a) => a.uuid === home.overview['uuid']);
    expect(mineHere.length).toBeGreaterThan(0);
    expect(overview.applies).toBeGreaterThanOrEqual(mineHere.length);
    expect(overview.maxLagMs).toBeGreaterThanOrEqual(Math.floor(Math.max(...mineHere.map((a) => a.lagMs)) * 10) / 10);
    const badSince = await httpRequest(`${web}/api/v1/txn-applies?since=yesterday`);
    expect(badSince.status).toBe(400);
    expect(JSON.parse(badSince.body)).toMatchObject({ code: 'INVALID_ARGUMENT' });

    // The master links to this console: the tserver reports its bound web address in heartbeats.
    const ts = await cl.tabletServers();
    expect(ts.map((t) => (t as { webAddress?: string }).webAddress).sort()).toEqual(cl.tservers.map((t) => t.webAddress).sort());
  }, 120_000);

  it('global_log_cache_size_limit_mb at run time: 0 keeps no Raft entries in memory, writes and reads go on from the files', async () => {
    const cl = cluster!;
    const c = client!;
    const webs = cl.tservers.map((t) => `http://${t.webAddress}`);
    const logCache = async (w: string): Promise<number> => ((await getJson(`${w}/api/v1/mem-trackers`)) as MemNode).children!.find((n) => n.id === 'log_cache')!.currentBytes;
    const evicted = async (w: string): Promise<number> => Number(/^log_cache_evicted_for_global_limit_bytes(?:\{[^}]*\})? (\d+)$/m.exec((await httpRequest(`${w}/prometheus-metrics`)).body)![1]);
    expect((await Promise.all(webs.map(logCache))).every((b) => b > 0)).toBe(true);
    for (const w of webs) expect(await postFlag(w, 'global_log_cache_size_limit_mb', '0', false)).toEqual({ name: 'global_log_cache_size_limit_mb', value: 0 });
    const rows = Array.from({ length: 100 }, (_, i) => ({ id: BigInt(1000 + i), v: `after-${i}` }));
    await c.table('webdemo').upsertMany(rows, { timeoutMs: 30_000 });
    // Every replica appended entries since (each append evicts the cache whole), so each holds none.
    await waitFor('every log cache empty', 20_000, async () => ((await Promise.all(webs.map(logCache))).every((b) => b === 0) ? true : undefined));
    for (const w of webs) expect(await evicted(w)).toBeGreaterThan(0);
    for (const r of rows.filter((_, i) => i % 10 === 0)) expect(await c.table('webdemo').get({ id: r.id })).toEqual(r);
    // Back to the default: entries stay in memory again.
    for (const w of webs) await postFlag(w, 'global_log_cache_size_limit_mb', '256', false);
    await c.table('webdemo').upsertMany(rows.map((r) => ({ ...r, v: `${r.v}-again` })), { timeoutMs: 30_000 });
    await waitFor('log caches filling again', 20_000, async () => ((await Promise.all(webs.map(logCache))).every((b) => b > 0) ? true : undefined));
    expect(await c.table('webdemo').get({ id: 1000n })).toEqual({ id: 1000n, v: 'after-0-again' });
  }, 60_000);
});
