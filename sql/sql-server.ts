/**
 * The SQL endpoint of a tserver process (YugabyteDB's YSQL postmaster): a TCP server speaking the
 * PostgreSQL wire protocol on --pgsql_proxy_bind_address (port 5433), executing SQL through the
 * client library. One TesseraClient, catalog cache and sequence cache serve every connection.
 */
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { TesseraClient } from '../client';
import { CERTS_DIR, CLUSTER_SECRET_FILE, LocalCallsClient, RPC_DEFAULT_TIMEOUT_MS, RPC_MAX_MESSAGE_SIZE, type LocalDispatcher, type RpcClient } from '../rpc';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { CATALOG_TABLE, SqlCatalog } from './exec/catalog';
import { SqlSession } from './exec/session';
import { SequenceCache } from './exec/sequences';
import { SqlError, SqlState } from './exec/sql-error';
import { loadParser } from './sql-parser';
import { YSQL_AUTH_METHOD, YSQL_AUTHENTICATION_TIMEOUT_MS, YSQL_CONNECTIONS_PER_IP_MAX, YSQL_LOCAL_CALLS, YSQL_MAX_CONNECTIONS, YSQL_PASSWORD, YSQL_SEQUENCE_CACHE_MINVAL } from './sql-flags';
import { PgConnection } from './wire/pg-connection';
import { backend } from './wire/pg-messages';

export const DATABASES = new Set(['yugabyte', 'postgres', 'template1']);
const EXTENSION_PREFIX = 'extension:';
/**
 * Deadline of each client operation of a statement (the client's default is 10 s; a statement that
 * writes 100 MiB through RF 3 on a busy machine needs more).
 */
export const SQL_CLIENT_TIMEOUT_MS = 60_000;
/** A connection waits this long for the client to reach the masters, then gets 57P03. */
export const CLIENT_READY_WAIT_MS = 15_000;

export interface SqlServerOptions {
  host: string;
  port: number;
  masterAddresses: string[];
  flags: Flags;
  log?: (msg: string) => void;
  /**
   * The tserver this endpoint runs beside: calls to the tablets it leads go to its RPC server inside
   * the process (rpc/local-calls.ts; docs/sql.md "Calls to the SQL node's own tablets"), unless
   * --ysql_local_calls is false.
   */
  localTServer?: { address: string; server: LocalDispatcher };
}

export class SqlServer {
  private server: net.Server | undefined;
  private client: TesseraClient | undefined;
  private catalog: SqlCatalog | undefined;
  private sequences: SequenceCache | undefined;
  private readonly extensions = new Set<string>();
  private readonly connections = new Map<number, PgConnection>();
  private nextPid = 1000 + Math.floor(Math.random() * 1000);
  address = '';

  constructor(private readonly opts: SqlServerOptions) {}

  private ready: Promise<void> | undefined;
  private stopped = false;

  /** Listen at once; connect the client to the masters in the background (they may start after this tserver). */
  async start(): Promise<void> {
    await loadParser();
    const server = net.createServer((s) => {
      if (this.withinIpLimit(s)) this.accept(s);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => reject(new DbError(ErrorCode.INVALID_ARGUMENT, `SQL endpoint cannot listen on ${this.opts.host}:${this.opts.port}: ${e.message}`)));
      server.listen(this.opts.port, this.opts.host, () => resolve());
    });
    const a = server.address() as net.AddressInfo;
    this.address = `${this.opts.host}:${a.port}`;
    this.ready = this.connectClient();
    this.ready.catch(() => undefined);
  }

  private async connectClient(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        // The tserver's own credentials: in a secured cluster the SQL layer is a client like any other.
        const secretFile = this.opts.flags.get(CLUSTER_SECRET_FILE);
        const certsDir = this.opts.flags.get(CERTS_DIR);
        this.client = await TesseraClient.connect({ masterAddresses: this.opts.masterAddresses, timeoutMs: SQL_CLIENT_TIMEOUT_MS, ...(secretFile ? { clusterSecretFile: secretFile } : {}), ...(certsDir ? { certsDir } : {}), ...this.localCalls() });
        break;
      } catch (e) {
        if (this.stopped) throw e;
        await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));
      }
    }
    this.catalog = new SqlCatalog(this.client);
    this.sequences = new SequenceCache(this.client, this.catalog, () => this.opts.flags.get(YSQL_SEQUENCE_CACHE_MINVAL));
    // Extensions created in the database are loaded in the background (absent catalog table: none yet).
    void this.loadExtensions().catch(() => undefined);
  }

  /** The client's calls to this process's own tserver skip the network (see SqlServerOptions.localTServer). */
  private localCalls(): { wrapRpc?: (rpc: RpcClient) => RpcClient } {
    const local = this.opts.localTServer;
    const flags = this.opts.flags;
    if (!local) return {};
    return { wrapRpc: (rpc) => new LocalCallsClient(rpc, local.address, local.server, flags.get(RPC_MAX_MESSAGE_SIZE), () => flags.get(RPC_DEFAULT_TIMEOUT_MS), () => flags.get(YSQL_LOCAL_CALLS)) };
  }

  /** Read the extensions created so far; creates nothing (a cluster nobody used SQL on keeps no SQL tables). */
  private async loadExtensions(): Promise<void> {
    for (const r of await this.client!.table(CATALOG_TABLE).scan()) {
      const name = String(r['name']);
      if (name.startsWith(EXTENSION_PREFIX)) this.extensions.add(name.slice(EXTENSION_PREFIX.length));
    }
  }

  /** Open sockets by remote address (ysql_connections_per_ip_max counts them before authentication). */
  private readonly openByIp = new Map<string, number>();

  private withinIpLimit(socket: net.Socket): boolean {
    const ip = socket.remoteAddress ?? '';
    const n = this.openByIp.get(ip) ?? 0;
    if (n >= this.opts.flags.get(YSQL_CONNECTIONS_PER_IP_MAX)) {
      socket.on('error', () => undefined);
      socket.end(backend.error({ severity: 'FATAL', code: SqlState.TOO_MANY_CONNECTIONS, message: `too many connections from ${ip} (ysql_connections_per_ip_max ${this.opts.flags.get(YSQL_CONNECTIONS_PER_IP_MAX)})` }));
      return false;
    }
    this.openByIp.set(ip, n + 1);
    socket.once('close', () => {
      const m = (this.openByIp.get(ip) ?? 1) - 1;
      if (m <= 0) this.openByIp.delete(ip);
      else this.openByIp.set(ip, m);
    });
    return true;
  }

  private accept(socket: net.Socket): void {
    const wait = new Promise<void>((_, reject) => setTimeout(() => reject(new Error('masters unreachable')), CLIENT_READY_WAIT_MS).unref());
    // Each new connection sees the extensions created through any server (one small scan).
    Promise.race([this.ready!.then(() => this.loadExtensions().catch(() => undefined)), wait]).then(
      () => this.acceptReady(socket),
      () => socket.end(backend.error({ severity: 'FATAL', code: '57P03', message: 'the database system is starting up (this tserver cannot reach the masters yet)' })),
    );
  }

  private acceptReady(socket: net.Socket): void {
    if (this.connections.size >= this.opts.flags.get(YSQL_MAX_CONNECTIONS)) {
      socket.end(backend.error({ severity: 'FATAL', code: SqlState.TOO_MANY_CONNECTIONS, message: 'sorry, too many clients already' }));
      return;
    }
    const flags = this.opts.flags;
    const conn = new PgConnection(socket, {
      openSession: (user, database, pid) => {
        if (!DATABASES.has(database)) throw new SqlError(SqlState.UNDEFINED_DATABASE, `database "${database}" does not exist (tessera serves yugabyte and postgres)`);
        return new SqlSession({ client: this.client!, catalog: this.catalog!, sequences: this.sequences!, flags, extensions: this.extensions, saveExtension: (n) => this.saveExtension(n) }, user, database, pid);
      },
      password: flags.get(YSQL_PASSWORD),
      authMethod: flags.get(YSQL_AUTH_METHOD) as 'scram-sha-256' | 'md5',
      authTimeoutMs: flags.get(YSQL_AUTHENTICATION_TIMEOUT_MS),
      cancel: (pid, secret) => {
        const c = this.connections.get(pid);
        if (c && c.key.secret === secret) c.cancel();
      },
      register: (c) => {
        const pid = this.nextPid++;
        this.connections.set(pid, c);
        return { pid, secret: crypto.randomBytes(4).readInt32BE() };
      },
      unregister: (c) => {
        if (this.connections.get(c.key.pid) === c) this.connections.delete(c.key.pid);
      },
      log: (m) => this.opts.log?.(m),
    });
    void conn.run();
  }

  private async saveExtension(name: string): Promise<void> {
    await this.catalog!.ensureTables();
    await this.client!.table(CATALOG_TABLE).upsert({ name: EXTENSION_PREFIX + name, def: '{}' });
    this.extensions.add(name);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.connections.values()) c.close();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    await this.client?.close();
  }
}
