/**
 * `tessera master …` and `tessera tserver …`: the raw YugabyteDB-style flags go through untouched to
 * masterMain / tserverMain; this file only wires the tserver's transport, codecs and heartbeat RPC
 * (the tserver takes them injected so its tests can run on an in-memory transport).
 */
import { UV_THREADPOOL_SIZE } from '../common/common-flags';
import { Flags, parseFlagArgs } from '../common/flags';
import { masterMain } from '../master/master-server';
import { defineMethod, isLoopbackHost, masterMethods, TSERVER_ADMIN_SERVICE, TSERVER_SERVICE, WsTransport } from '../rpc';
import type { TServerMethods } from '../tserver/tablet-service';
import { tserverMain, type TServerWiring } from '../tserver/tserver-server';
import { RPC_BIND_ADDRESSES, TSERVER_MASTER_ADDRS } from '../tserver/tserver-flags';
import { ENABLE_YSQL, PGSQL_PORT_DEFAULT, PGSQL_PROXY_BIND_ADDRESS, SqlServer, YSQL_PASSWORD, type SqlServerOptions } from '../sql';
import { DbError, ErrorCode } from '../common/errors';

function tserverMethods(): TServerMethods {
  return {
    write: defineMethod(TSERVER_SERVICE, 'Write', 'WriteRequestPB', 'WriteResponsePB'),
    read: defineMethod(TSERVER_SERVICE, 'Read', 'ReadRequestPB', 'ReadResponsePB'),
    scan: defineMethod(TSERVER_SERVICE, 'Scan', 'ScanRequestPB', 'ScanResponsePB'),
    createTablet: defineMethod(TSERVER_ADMIN_SERVICE, 'CreateTablet', 'CreateTabletRequestPB', 'CreateTabletResponsePB'),
    deleteTablet: defineMethod(TSERVER_ADMIN_SERVICE, 'DeleteTablet', 'DeleteTabletRequestPB', 'DeleteTabletResponsePB'),
    alterSchema: defineMethod(TSERVER_ADMIN_SERVICE, 'AlterSchema', 'AlterSchemaRequestPB', 'AlterSchemaResponsePB'),
    leaderStepdown: defineMethod(TSERVER_ADMIN_SERVICE, 'LeaderStepdown', 'LeaderStepdownRequestPB', 'LeaderStepdownResponsePB'),
    changeConfig: defineMethod(TSERVER_ADMIN_SERVICE, 'ChangeConfig', 'ChangeConfigRequestPB', 'ChangeConfigResponsePB'),
    setFlag: defineMethod(TSERVER_ADMIN_SERVICE, 'SetFlag', 'SetFlagRequestPB', 'SetFlagResponsePB'),
    listTablets: defineMethod(TSERVER_ADMIN_SERVICE, 'ListTablets', 'ListTabletsRequestPB', 'ListTabletsResponsePB'),
    fetchSnapshotChunk: defineMethod(TSERVER_ADMIN_SERVICE, 'FetchSnapshotChunk', 'FetchSnapshotChunkRequestPB', 'FetchSnapshotChunkResponsePB'),
  };
}

export function tserverWiring(argv: readonly string[]): TServerWiring {
  // The transport reads its limits (rpc_max_message_size, timeouts) from the same flags.
  const { flags } = parseFlagArgs(argv, new Flags());
  return {
    transport: new WsTransport({ flags }),
    methods: tserverMethods(),
    heartbeat: (client, address, req, timeoutMs) => client.call(address, masterMethods().tsHeartbeat, req, { timeoutMs }),
  };
}

/**
 * Size libuv's thread pool from --uv_threadpool_size before anything uses it (the pool starts at its
 * first task and reads UV_THREADPOOL_SIZE then). Bad flags are left for the server's own parse,
 * which reports them.
 */
export function applyThreadpoolSize(argv: readonly string[]): void {
  let n: number;
  try {
    n = parseFlagArgs(argv, new Flags()).flags.get(UV_THREADPOOL_SIZE);
  } catch {
    return;
  }
  process.env['UV_THREADPOOL_SIZE'] = String(n);
}

export async function runMaster(argv: readonly string[]): Promise<void> {
  applyThreadpoolSize(argv);
  await masterMain(argv);
}

/**
 * The tserver process also serves SQL (YugabyteDB runs its YSQL postmaster beside each tserver):
 * on --pgsql_proxy_bind_address, default the RPC host with port 5433, unless --enable_ysql=false.
 */
export async function startSqlEndpoint(argv: readonly string[], shared?: Flags, localTServer?: SqlServerOptions['localTServer']): Promise<SqlServer | undefined> {
  const flags = shared ?? parseFlagArgs(argv, new Flags()).flags;
  const masters = flags.get(TSERVER_MASTER_ADDRS);
  let where: ReturnType<typeof sqlBindOf>;
  try {
    where = sqlBindOf(flags);
  } catch (e) {
    // The default address follows the RPC host: a server bound beyond loopback (a container, a pod)
    // runs without SQL rather than with trust authentication open to other hosts, and says so. An
    // address given explicitly must be allowed.
    if (flags.get(PGSQL_PROXY_BIND_ADDRESS)) throw e;
    process.stderr.write(`tserver runs without its SQL endpoint: ${e instanceof Error ? e.message : String(e)}\n`);
    return undefined;
  }
  if (!where || !masters) return undefined;
  const { host, port } = where;
  const sql = new SqlServer({ host, port, masterAddresses: masters.split(','), flags, log: (m) => process.stderr.write(m + '\n'), ...(localTServer ? { localTServer } : {}) });
  try {
    await sql.start();
  } catch (e) {
    // The default address may be taken by another tserver on the same host (port-shifted local clusters):
    // this tserver then runs without SQL and says so. An address given explicitly must work.
    if (flags.get(PGSQL_PROXY_BIND_ADDRESS)) throw e;
    process.stderr.write(`tserver runs without its SQL endpoint: ${e instanceof Error ? e.message : String(e)} (give --pgsql_proxy_bind_address)\n`);
    return undefined;
  }
  process.stdout.write(`tserver SQL (PostgreSQL protocol) on ${sql.address}: psql -h ${sql.address.slice(0, sql.address.lastIndexOf(':'))} -p ${sql.address.slice(sql.address.lastIndexOf(':') + 1)} -U yugabyte\n`);
  return sql;
}

/**
 * Where the SQL endpoint listens (undefined with --enable_ysql=false), checked before anything listens:
 * trust authentication is for loopback only, so SQL reachable from other hosts needs a password.
 */
function sqlBindOf(flags: Flags): { bind: string; host: string; port: number } | undefined {
  if (!flags.get(ENABLE_YSQL)) return undefined;
  const bind = flags.get(PGSQL_PROXY_BIND_ADDRESS) || `${hostOf(flags.get(RPC_BIND_ADDRESSES))}:${PGSQL_PORT_DEFAULT}`;
  const at = bind.lastIndexOf(':');
  const host = at > 0 ? bind.slice(0, at) : bind;
  if (!isLoopbackHost(host) && !flags.get(YSQL_PASSWORD)) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `SQL address ${bind} is not loopback: a SQL endpoint reachable from other hosts needs --ysql_password (or --enable_ysql=false; docs/security.md)`, { host });
  }
  return { bind, host, port: at > 0 ? Number(bind.slice(at + 1)) : PGSQL_PORT_DEFAULT };
}

function hostOf(addr: string): string {
  const first = addr.split(',')[0]!.trim();
  const at = first.lastIndexOf(':');
  return at > 0 ? first.slice(0, at) : first || '127.0.0.1';
}

export async function runTServer(argv: readonly string[]): Promise<void> {
  applyThreadpoolSize(argv);
  // An explicit SQL address that would be refused fails the start before anything listens (the default
  // one follows the RPC host, whose own check comes first, in the tserver's start).
  const { flags } = parseFlagArgs(argv, new Flags());
  if (flags.get(PGSQL_PROXY_BIND_ADDRESS)) sqlBindOf(flags);
  // The SQL layer calls the tablets its own tserver leads inside the process (rpc/local-calls.ts).
  await tserverMain(argv, tserverWiring(argv), (flags, ts) => {
    const server = ts.rpcServer;
    return startSqlEndpoint(argv, flags, server.dispatchLocal ? { address: ts.rpcAddress, server: { dispatchLocal: (s, m, p, t) => server.dispatchLocal!(s, m, p, t) } } : undefined);
  });
}
