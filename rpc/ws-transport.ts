/**
 * The real transport: protobuf frames over WebSocket (`ws`), one connection per (client, server
 * address) pair. Limits come from the server's Flags (rpc_max_message_size, timeouts) when given.
 */
import { Flags, silentLogger, type Logger } from '../common';
import { RPC_CONNECT_TIMEOUT_MS, RPC_CONNECTION_TIMEOUT_MS, RPC_DEFAULT_TIMEOUT_MS, RPC_KEEPALIVE_INTERVAL_MS, RPC_MAX_MESSAGE_SIZE, RPC_RECONNECT_BACKOFF_MAX_MS, RPC_TCP_CONNECT_TIMEOUT_MS } from './rpc-flags';
import type { ClientOptions, RpcClient, RpcServer, ServerOptions, Transport } from './types';
import { WsRpcClient } from './ws-client';
import { WsRpcServer } from './ws-server';
import { RPC_CONNECTIONS_PER_IP_MAX, RPC_FRAME_TIMEOUT_MS, RPC_HANDSHAKE_TIMEOUT_MS } from './listener-limits';
import { clusterSecretsOf, type ClusterSecrets } from './cluster-secret';
import { CERTS_DIR, certNodeName, clientTlsOf, hostOfAddress, serverTlsOf, type ClientTls, type ServerTls } from './tls';
import { SERVER_BROADCAST_ADDRESSES } from '../common/server-flags';

export interface WsTransportOptions {
  flags?: Flags;
  log?: Logger;
  /** Overrides the flag (tests). */
  messageBytesMax?: number;
  /** The cluster secrets (first one sent, all accepted); default: --cluster_secret_file's, read once here. */
  clusterSecrets?: ClusterSecrets;
  /** The CA this transport's clients verify servers against (wss); default: --certs_dir's ca.crt. */
  clientTls?: ClientTls;
  /** Its servers' certificate and key (wss); default: --certs_dir's node.<name>.crt/.key. */
  serverTls?: ServerTls;
}

export class WsTransport implements Transport {
  private readonly flags: Flags;
  private readonly log: Logger;
  private readonly secrets: ClusterSecrets;

  constructor(private readonly opts: WsTransportOptions = {}) {
    this.flags = opts.flags ?? new Flags();
    this.log = opts.log ?? silentLogger();
    // A bad or missing file fails here, before anything listens (the server's start error names it).
    this.secrets = opts.clusterSecrets ?? clusterSecretsOf(this.flags);
    const certsDir = this.flags.get(CERTS_DIR);
    this.clientTls = opts.clientTls ?? (certsDir ? clientTlsOf(certsDir) : undefined);
  }

  private readonly clientTls: ClientTls | undefined;

  /** A server's certificate files are named by --cert_node_filename, else its host (its broadcast host when it binds every interface). */
  private serverTls(host: string): ServerTls | undefined {
    if (this.opts.serverTls) return this.opts.serverTls;
    const certsDir = this.flags.get(CERTS_DIR);
    if (!certsDir) return undefined;
    const wildcard = host === '0.0.0.0' || host === '::' || host === '';
    const broadcast = this.flags.get(SERVER_BROADCAST_ADDRESSES);
    return serverTlsOf(certsDir, certNodeName(this.flags, wildcard && broadcast ? hostOfAddress(broadcast) : host));
  }

  private messageBytesMax(): number {
    return this.opts.messageBytesMax ?? this.flags.get(RPC_MAX_MESSAGE_SIZE);
  }

  createServer(opts: ServerOptions): WsRpcServer & RpcServer {
    const flags = this.flags;
    const tls = this.serverTls(opts.host);
    return new WsRpcServer(opts, {
      log: this.log,
      messageBytesMax: this.messageBytesMax(),
      defaultTimeoutMs: () => flags.get(RPC_DEFAULT_TIMEOUT_MS),
      keepaliveIntervalMs: flags.get(RPC_KEEPALIVE_INTERVAL_MS),
      connectionTimeoutMs: flags.get(RPC_CONNECTION_TIMEOUT_MS),
      handshakeTimeoutMs: flags.get(RPC_HANDSHAKE_TIMEOUT_MS),
      frameTimeoutMs: flags.get(RPC_FRAME_TIMEOUT_MS),
      connectionsPerIpMax: flags.get(RPC_CONNECTIONS_PER_IP_MAX),
      secrets: this.secrets,
      ...(tls ? { tls } : {}),
    });
  }

  createClient(opts: ClientOptions = {}): WsRpcClient & RpcClient {
    const flags = this.flags;
    return new WsRpcClient({
      log: this.log,
      ...(opts.caller !== undefined ? { caller: opts.caller } : {}),
      messageBytesMax: this.messageBytesMax(),
      defaultTimeoutMs: () => flags.get(RPC_DEFAULT_TIMEOUT_MS),
      connectTimeoutMs: flags.get(RPC_CONNECT_TIMEOUT_MS),
      tcpConnectTimeoutMs: flags.get(RPC_TCP_CONNECT_TIMEOUT_MS),
      backoffMaxMs: flags.get(RPC_RECONNECT_BACKOFF_MAX_MS),
      keepaliveIntervalMs: flags.get(RPC_KEEPALIVE_INTERVAL_MS),
      connectionTimeoutMs: flags.get(RPC_CONNECTION_TIMEOUT_MS),
      ...(this.secrets[0] !== undefined ? { secret: this.secrets[0] } : {}),
      ...(this.clientTls ? { tls: this.clientTls } : {}),
    });
  }
}
