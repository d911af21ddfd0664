/**
 * Three tservers in one process over an in-memory Transport (real WALs and RocksDB on temp dirs):
 * tablet creation through the admin service, writes through the leader, failover after stopping the
 * leader server, and no acknowledged write lost. (The WebSocket variant is test/integration.)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode, type WireError } from '../../common/errors';
import { Flags } from '../../common/flags';
import { silentLogger } from '../../common/log';
import { makeDocKey } from '../../docdb/encoding/doc-key';
import type { Codec, Handler, MethodDef, OnewayDef, OnewayHandler, RpcClient, RpcServer, ServerOptions, Transport } from '../../rpc/types';
import { startTServer, type TServer, type TServerMethods } from '../../tserver';
import type * as pb from '../../tserver/tserver-pb';

/** Objects pass by structured clone (bigint and Uint8Array survive); oneway messages go through their codec. */
class MemTransport implements Transport {
  readonly servers = new Map<string, MemServer>();
  private nextPort = 20000;
  createServer(o: ServerOptions): RpcServer {
    return new MemServer(this, o.host, o.port || this.nextPort++);
  }
  createClient(): RpcClient {
    const t = this;
    return {
      async call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req): Promise<Resp> {
        await new Promise((r) => setImmediate(r));
        const s = t.servers.get(address);
        if (!s) throw new DbError(ErrorCode.NETWORK_ERROR, `no server at ${address}`);
        const h = s.handlers.get(`${m.service}.${m.method}`) as Handler<Req, Resp> | undefined;
        if (!h) throw new DbError(ErrorCode.UNKNOWN_METHOD, m.method);
        try {
          return structuredClone(await h(structuredClone(req), { peer: 'mem', deadlineMonoMs: performance.now() + 10_000 }));
        } catch (e) {
          const w: WireError = DbError.from(e).toWire();
          throw DbError.fromWire(structuredClone(w));
        }
      },
      send<M>(address: string, m: OnewayDef<M>, msg: M): void {
        const bytes = m.msg.encode(msg);
        setImmediate(() => {
          const s = t.servers.get(address);
          const h = s?.oneways.get(`${m.service}.${m.method}`) as OnewayHandler<M> | undefined;
          h?.(m.msg.decode(bytes), { peer: 'mem', deadlineMonoMs: 0 });
        });
      },
      close: () => Promise.resolve(),
    };
  }
}

class MemServer implements RpcServer {
  readonly handlers = new Map<string, unknown>();
  readonly oneways = new Map<string, unknown>();
  readonly address: string;
  constructor(
    private readonly t: MemTransport,
    host: string,
    port: number,
  ) {
    this.address = `${host}:${port}`;
  }
  handle<Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void {
    this.handlers.set(`${m.service}.${m.method}`, h);
  }
  onOneway<M>(m: OnewayDef<M>, h: OnewayHandler<M>): void {
    this.oneways.set(`${m.service}.${m.method}`, h);
  }
  setStarting(): void {
    // Only masters listen before registering their methods; these tests run tservers.
  }
  start(): Promise<void> {
    this.t.servers.set(this.address, this);
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.t.servers.delete(this.address);
    return Promise.resolve();
  }
}

const none: Codec<never> = { encode: () => new Uint8Array(), decode: () => undefined as never };
function def<Req, Resp>(service: string, method: string): MethodDef<Req, Resp> {
  return { service, method, req: none as Codec<Req>, resp: none as Codec<Resp> };
}
const methods: TServerMethods = {
  write: def('tessera.TabletServerService', 'Write'),
  read: def('tessera.TabletServerService', 'Read'),
  scan: def('tessera.TabletServerService', 'Scan'),
  createTablet: def('tessera.TabletServerAdminService', 'CreateTablet'),
  deleteTablet: def('tessera.TabletServerAdminService', 'DeleteTablet'),
  alterSchema: def('tessera.TabletServerAdminService', 'AlterSchema'),
  leaderStepdown: def('tessera.TabletServerAdminService', 'LeaderStepdown'),
  changeConfig: def('tessera.TabletServerAdminService', 'ChangeConfig'),
  setFlag: def('tessera.TabletServerAdminService', 'SetFlag'),
  listTablets: def('tessera.TabletServerAdminService', 'ListTablets'),
  fetchSnapshotChunk: def('tessera.TabletServerAdminService', 'FetchSnapshotChunk'),
};

const dirs: string[] = [];
const servers: TServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function until<T>(f: () => T | undefined | false, ms: number, what: string): Promise<T> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const v = f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One tserver on `transport` with its own data directory, bound at 127.0.0.1:`port`, with `extra` flags. */
async function startServer(transport: MemTransport, port: number, extra: Record<string, string>, prefix = 'tessera-ts-'): Promise<TServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  const flags = new Flags();
  flags.setFromString('fs_data_dirs', dir);
  flags.setFromString('rpc_bind_addresses', `127.0.0.1:${port}`);
  for (const [k, v] of Object.entries(extra)) flags.setFromString(k, v);
  const s = await startTServer({ flags, transport, methods, log: silentLogger() });
  servers.push(s);
  return s;
}

const schema: pb.TableSchemaPB = { columns: [{ name: 'id', id: 0, type: 'int64' }, { name: 'v', id: 1, type: 'string', nullable: true }], hashColumns: ['id'] };
const keyPb = (i: number): pb.DocKeyPB => {
  const k = makeDocKey([BigInt(i)]);
  return { hash: k.hash, hashed: [{ int64Value: BigInt(i) }], range: [] };
};

describe('tserver cluster (in-memory transport)', () => {
  it('tserver: --memstore_size_mb sets the memtable size of each replica\'s RegularDB and IntentsDB (RocksDB write_buffer_size in its OPTIONS file), spread by --memstore_size_spread_pct', async () => {
    const transport = new MemTransport();
    const client = transport.createClient();
    const optionsOf = (dir: string): number[] =>
      ['regular', 'intents'].map((db) => {
        const d = path.join(dir, 'tablets', 'tab1', db);
        const file = fs.readdirSync(d).filter((f) => f.startsWith('OPTIONS-')).sort().pop();
        const m = /^\s*write_buffer_size=(\d+)$/m.exec(fs.readFileSync(path.join(d, file ?? 'none'), 'utf8'));
        return Number(m?.[1]);
      });
    // A size given, no spread (the default): exactly that size. The default size: exactly 128 MiB
    // (YugabyteDB's memstore_size_mb). With a spread of 25 %: 96-160 MiB, a size per database.
    for (const [i, mb, spread] of [[0, '2', undefined], [1, undefined, undefined], [2, undefined, '25']] as const) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ts-mem-'));
      dirs.push(dir);
      const flags = new Flags();
      flags.setFromString('fs_data_dirs', dir);
      flags.setFromString('rpc_bind_addresses', `127.0.0.1:${9250 + i}`);
      if (mb !== undefined) flags.setFromString('memstore_size_mb', mb);
      if (spread !== undefined) flags.setFromString('memstore_size_spread_pct', spread);
      const s = await startTServer({ flags, transport, methods, log: silentLogger() });
      servers.push(s);
      await client.call(s.rpcAddress, methods.createTablet, { tabletId: 'tab1', tableId: 'demo-id', tableName: 'demo', schema, partition: { start: 0, end: 65536 }, peers: [{ uuid: s.uuid, rpcAddress: s.rpcAddress, memberType: 'VOTER' }] });
      const sizes = optionsOf(dir);
      if (spread === undefined) expect(sizes, `memstore_size_mb=${mb ?? 'default'}`).toEqual(mb === '2' ? [2 << 20, 2 << 20] : [128 << 20, 128 << 20]);
      else {
        for (const b of sizes) {
          expect(b).toBeGreaterThanOrEqual(96 << 20);
          expect(b).toBeLessThanOrEqual(160 << 20);
        }
        expect(sizes[0]).not.toBe(sizes[1]);
      }
    }
  });

  it('tserver: 3 replicas replicate writes, fail over when the leader server stops, and lose no acknowledged write', async () => {
    const transport = new MemTransport();
    for (let i = 0; i < 3; i++) await startServer(transport, 9200 + i, { raft_tick_interval_ms: '10', raft_election_timeout_ticks: '10' });
    const client = transport.createClient();
    const peers = servers.map((s) => ({ uuid: s.uuid, rpcAddress: s.rpcAddress, memberType: 'VOTER' }));
    for (const s of servers) {
      await client.call(s.rpcAddress, methods.createTablet, { tabletId: 'tab1', tableId: 'demo-id', tableName: 'demo', schema, partition: { start: 0, end: 65536 }, peers });
    }
    // Bad input never crashes: unknown tablet, wrong type, unknown op.
    await expect(client.call(servers[0]!.rpcAddress, methods.write, { tabletId: 'nope', ops: [] })).rejects.toMatchObject({ code: ErrorCode.TABLET_NOT_FOUND });

    const leaderOf = (live: TServer[]) => live.find((s) => s.manager.has('tab1') && s.manager.get('tab1').raftGroup().isLeaderReady());
    let leader = await until(() => leaderOf(servers), 10_000, 'a leader');
    const badType = await client.call(leader.rpcAddress, methods.write, { tabletId: 'tab1', ops: [{ type: 'UPSERT', key: keyPb(1), columns: [{ columnId: 1, value: { int64Value: 5n } }] }] }).catch((e: unknown) => e);
    expect((badType as DbError).code).toBe(ErrorCode.INVALID_ARGUMENT);

    const acked = new Set<number>();
    const N = 1000;
    for (let b = 0; b < N; b += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const i = b + j;
          await client.call(leader.rpcAddress, methods.write, { tabletId: 'tab1', ops: [{ type: 'UPSERT', key: keyPb(i), columns: [{ columnId: 1, value: { stringValue: `v${i}` } }] }] });
          acked.add(i);
        }),
      );
    }
    expect(acked.size).toBe(N);
    // A follower answers NOT_THE_LEADER with the leader's address.
    const follower = servers.find((s) => s !== leader)!;
    const nl = await client.call(follower.rpcAddress, methods.read, { tabletId: 'tab1', keys: [keyPb(1)] }).catch((e: unknown) => e);
    expect((nl as DbError).code).toBe(ErrorCode.NOT_THE_LEADER);
    expect((nl as DbError).details['leaderHint']).toBe(leader.rpcAddress);

    const readAll = async (addr: string): Promise<number> => {
      let found = 0;
      for (let b = 0; b < N; b += 500) {
        const r = await client.call(addr, methods.read, { tabletId: 'tab1', keys: Array.from({ length: 500 }, (_, j) => keyPb(b + j)) });
        (r.found ?? []).forEach((f, j) => {
          if (f && r.rows![j]!.columns![0]!.value!.stringValue === `v${b + j}`) found++;
        });
      }
      return found;
    };
    expect(await readAll(leader.rpcAddress)).toBe(N);
    // An INSERT as a retryable request (client id, request id), which the replicas remember.
    const tagged: pb.WriteRequestPB = { tabletId: 'tab1', ops: [{ type: 'INSERT', key: keyPb(N), columns: [{ columnId: 1, value: { stringValue: 'once' } }] }], clientId: 'client-1', requestId: 1n, minRunningRequestId: 1n };
    const firstAnswer = await client.call(leader.rpcAddress, methods.write, tagged);

    // Stop the leader server: a new leader serves within a few election timeouts.
    await leader.stop();
    const live = servers.filter((s) => s !== leader);
    leader = await until(() => leaderOf(live), 10_000, 'a new leader');
    expect(await readAll(leader.rpcAddress)).toBe(N);
    // The INSERT resent to the new leader (its answer was lost, say) is answered, not done again.
    expect((await client.call(leader.rpcAddress, methods.write, tagged)).writeHt).toBe(firstAnswer.writeHt);
    const other = await client.call(leader.rpcAddress, methods.write, { ...tagged, requestId: 2n }).catch((e: unknown) => e);
    expect((other as DbError).code).toBe(ErrorCode.ALREADY_EXISTS);
    const scan = await client.call(leader.rpcAddress, methods.scan, { tabletId: 'tab1', limit: 10_000 });
    expect(scan.rows?.length).toBe(N + 1);
    const json = await leader.tabletsJson();
    expect(json.tablets[0]).toMatchObject({ tabletId: 'tab1', table: 'demo', role: 'LEADER', state: 'RUNNING' });
  }, 60_000);

  it('tserver: a new replica added after log GC catches up by remote bootstrap (snapshot of both databases)', async () => {
    const transport = new MemTransport();
    const start = (i: number): Promise<TServer> => startServer(transport, 9300 + i, { raft_tick_interval_ms: '10', raft_election_timeout_ticks: '10', remote_bootstrap_chunk_bytes: '2048' });
    const first = [await start(0), await start(1), await start(2)];
    const client = transport.createClient();
    const peers = first.map((s) => ({ uuid: s.uuid, rpcAddress: s.rpcAddress, memberType: 'VOTER' }));
    for (const s of first) await client.call(s.rpcAddress, methods.createTablet, { tabletId: 'tab2', tableId: 'x', tableName: 'demo', schema, peers });
    const leader = await until(() => first.find((s) => s.manager.get('tab2').raftGroup().isLeaderReady()), 10_000, 'a leader');
    for (let i = 0; i < 300; i++) {
      await client.call(leader.rpcAddress, methods.write, { tabletId: 'tab2', ops: [{ type: 'UPSERT', key: keyPb(i), columns: [{ columnId: 1, value: { stringValue: `v${i}` } }] }] });
    }
    // Rows 0..9 written again, then the leader's history GC collects their first versions: its history
    // floor travels with the snapshot (a meta key of RegularDB), so the new replica refuses the same reads.
    for (let i = 0; i < 10; i++) await client.call(leader.rpcAddress, methods.write, { tabletId: 'tab2', ops: [{ type: 'UPSERT', key: keyPb(i), columns: [{ columnId: 1, value: { stringValue: `again ${i}` } }] }] });
    // A retryable INSERT whose entry the compaction below drops: the snapshot carries the request.
    const tagged: pb.WriteRequestPB = { tabletId: 'tab2', ops: [{ type: 'INSERT', key: keyPb(1000), columns: [{ columnId: 1, value: { stringValue: 'once' } }] }], clientId: 'client-2', requestId: 7n, minRunningRequestId: 7n };
    const firstAnswer = await client.call(leader.rpcAddress, methods.write, tagged);
    const collected = await leader.manager.get('tab2').db().gc(BigInt(firstAnswer.writeHt!));
    expect(collected.versionsDropped).toBe(20); // liveness and column of each first version
    // An ALTER TABLE reaches the replicas as a CHANGE_SCHEMA entry, which the compaction below drops.
    const altered: pb.TableSchemaPB = { ...schema, columns: [...schema.columns!, { name: 'w', id: 2, type: 'int64', nullable: true }] };
    await client.call(leader.rpcAddress, methods.alterSchema, { tabletId: 'tab2', schema: altered, schemaVersion: 1, tableName: 'demo2' });
    // A write after it, so the databases' frontier (and the compaction) passes the CHANGE_SCHEMA entry.
    await client.call(leader.rpcAddress, methods.write, { tabletId: 'tab2', ops: [{ type: 'UPSERT', key: keyPb(300), columns: [{ columnId: 2, value: { int64Value: 7n } }] }], schemaVersion: 1 });
    // Compact the leader's log past everything written: a new replica cannot catch up from the log.
    const compacted = await leader.manager.get('tab2').gcLog(0);
    expect(compacted).toBeGreaterThan(302);
    const fresh = await start(3);
    await client.call(fresh.rpcAddress, methods.createTablet, {
      tabletId: 'tab2', tableId: 'x', tableName: 'demo', schema,
      peers: [...peers, { uuid: fresh.uuid, rpcAddress: fresh.rpcAddress, memberType: 'LEARNER' }],
    });
    await client.call(leader.rpcAddress, methods.changeConfig, { tabletId: 'tab2', type: 'ADD_LEARNER', peer: { uuid: fresh.uuid, rpcAddress: fresh.rpcAddress } });
    const target = leader.manager.get('tab2').status().commit;
    await until(() => fresh.manager.get('tab2').status().appliedIndex >= target, 15_000, 'the new replica to catch up');
    expect(fresh.manager.get('tab2').metrics.snapshotsInstalled).toBe(1);
    expect(fresh.manager.get('tab2').historyFloorHt()).toBe(collected.cutoffHt);
    // Created with the schema before the ALTER, it took the source's from the snapshot.
    expect([fresh.manager.get('tab2').meta.schemaVersion, fresh.manager.get('tab2').meta.tableName, fresh.manager.get('tab2').meta.schema.columns.length]).toEqual([1, 'demo2', 3]);
    // Its databases now hold the rows: make it leader and read them back there.
    await client.call(leader.rpcAddress, methods.changeConfig, { tabletId: 'tab2', type: 'PROMOTE', peer: { uuid: fresh.uuid } });
    await until(() => fresh.manager.get('tab2').status().conf.voters.includes(fresh.uuid as never), 10_000, 'the new replica to see itself as a voter');
    for (let attempt = 0; attempt < 5 && !fresh.manager.get('tab2').raftGroup().isLeaderReady(); attempt++) {
      const cur = servers.find((s) => s.manager.has('tab2') && s.manager.get('tab2').raftGroup().isLeader());
      if (cur && cur !== fresh) await client.call(cur.rpcAddress, methods.leaderStepdown, { tabletId: 'tab2', newLeaderUuid: fresh.uuid }).catch(() => undefined);
      await until(() => fresh.manager.get('tab2').raftGroup().isLeaderReady(), 2_000, 'the new replica to lead').catch(() => undefined);
    }
    expect(fresh.manager.get('tab2').raftGroup().isLeaderReady()).toBe(true);
    const r = await client.call(fresh.rpcAddress, methods.read, { tabletId: 'tab2', keys: Array.from({ length: 300 }, (_, i) => keyPb(i)), schemaVersion: 1 });
    expect(r.found?.filter(Boolean).length).toBe(300);
    expect((await client.call(fresh.rpcAddress, methods.write, { ...tagged, schemaVersion: 1 })).writeHt).toBe(firstAnswer.writeHt);
  }, 60_000);

  it('tserver: the replica a CreateTablet marks campaign leads the new tablet without waiting out an election timeout', async () => {
    const transport = new MemTransport();
    // An election timeout of at least 30 s: within the wait below only the campaign can elect.
    for (let i = 0; i < 3; i++) await startServer(transport, 9300 + i, { raft_tick_interval_ms: '10', raft_election_timeout_ticks: '3000' }, 'tessera-ts-campaign-');
    const client = transport.createClient();
    const peers = servers.map((s) => ({ uuid: s.uuid, rpcAddress: s.rpcAddress, memberType: 'VOTER' }));
    // The campaigning replica is created first: its peers do not exist yet, so it campaigns again later.
    for (const s of [servers[1]!, servers[0]!, servers[2]!]) {
      await client.call(s.rpcAddress, methods.createTablet, { tabletId: 'tabc', tableId: 'c-id', tableName: 'c', schema, partition: { start: 0, end: 65536 }, peers, campaign: s === servers[1] });
    }
    const leader = await until(() => servers.find((s) => s.manager.get('tabc').raftGroup().isLeaderReady()), 10_000, 'the campaigning replica to lead');
    expect(leader).toBe(servers[1]);
    await client.call(leader.rpcAddress, methods.write, { tabletId: 'tabc', ops: [{ type: 'UPSERT', key: keyPb(1), columns: [{ columnId: 1, value: { stringValue: 'x' } }] }] });
  });
});
