/**
 * The simulated network: every server and client of a simulated cluster lives in one process and
 * messages travel through a schedule the test controls (`deliverNext()` / `deliverAll()` /
 * `advance(ms)`). Faults (drop, duplicate, reorder, delay, partitions) draw from a seeded Rng and time
 * is a ManualClock, so a seed replays exactly. Payloads go through the real codecs and the same
 * dispatch code as the WebSocket transport, so codec bugs and error semantics show up here too.
 *
 * Nodes are hosts: a server `h:p` lives on host `h`, a client created by `network.transport(h)` too.
 * Partitions cut hosts apart; a packet is checked against the cuts when it is delivered.
 */
import {
  DbError,
  ErrorCode,
  RPC_MESSAGE_BYTES_MAX_DEFAULT,
  silentLogger,
  type Logger,
  type ManualClock,
  type Rng,
  type WireError,
} from '../common';
import { MinHeap } from './min-heap';
import { RPC_DEFAULT_TIMEOUT_MS } from './rpc-flags';
import type { Codec, ServerOptions, Transport } from './types';
import { SimRpcClient, SimRpcServer, type Packet, type SimWire } from './sim-endpoints';

export { SimRpcClient, SimRpcServer } from './sim-endpoints';

export interface SimFaults {
  /** Probability a packet is lost. */
  dropProb: number;
  /** Probability a packet is delivered twice. */
  dupProb: number;
  /** Probability a packet may overtake up to `reorderWindow` packets sent before it. */
  reorderProb: number;
  reorderWindow: number;
  /** Delivery delay in simulated ms, uniform in [min, max]. */
  delayMinMs: number;
  delayMaxMs: number;
}

export const NO_FAULTS: SimFaults = { dropProb: 0, dupProb: 0, reorderProb: 0, reorderWindow: 8, delayMinMs: 0, delayMaxMs: 0 };

export interface SimNetworkOptions {
  rng: Rng;
  clock: ManualClock;
  log?: Logger;
  faults?: Partial<SimFaults>;
  messageBytesMax?: number;
  defaultTimeoutMs?: number;
}

/** Packets waiting for delivery before new sends are dropped (a runaway simulation, not a real limit). */
export const SIM_PACKETS_MAX = 1_000_000;
const DELIVER_ALL_ROUNDS_MAX = 10_000;
const FIRST_EPHEMERAL_PORT = 40_000;

interface PendingCall {
  readonly client: SimRpcClient;
  readonly toAddress: string;
  readonly codec: Codec<unknown>;
  readonly deadlineMs: number;
  readonly timeoutMs: number;
  /** Answers this client had heard from toAddress when the call was made. */
  readonly answersAtStart: number;
  readonly service: string;
  readonly method: string;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: DbError) => void;
}

export function hostOf(address: string): string {
  const i = address.lastIndexOf(':');
  return i < 0 ? address : address.slice(0, i);
}

function linkKey(from: string, to: string): string {
  return `${from}\u0000${to}`;
}

export class SimNetwork implements SimWire {
  readonly clock: ManualClock;
  private readonly rng: Rng;
  private readonly log: Logger;
  private faults: SimFaults;
  readonly messageBytesMax: number;
  readonly defaultTimeoutMs: number;
  private readonly queue = new MinHeap<Packet>((a, b) => a.atMs < b.atMs || (a.atMs === b.atMs && (a.order < b.order || (a.order === b.order && a.seq < b.seq))));
  private seq = 0;
  private nextCallId = 1;
  private nextClientId = 1;
  private readonly servers = new Map<string, SimRpcServer>();
  private readonly epochs = new Map<string, number>();
  private readonly clients = new Map<number, SimRpcClient>();
  private readonly pending = new Map<number, PendingCall>();
  /** client id|server address → answers from that server that reached that client (a timed-out call says whether it was heard from meanwhile). */
  private readonly answersHeard = new Map<string, number>();
  private readonly cuts = new Set<string>();
  private readonly lastAtMs = new Map<string, number>();
  private readonly nextPort = new Map<string, number>();
  private lastTimeoutCheckMs = Number.NaN;
  /** Counters for tests and the simulator's report. */
  readonly stats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0, cutDropped: 0 };

  constructor(opts: SimNetworkOptions) {
    this.rng = opts.rng;
    this.clock = opts.clock;
    this.log = opts.log ?? silentLogger();
    this.faults = { ...NO_FAULTS, ...opts.faults };
    this.messageBytesMax = opts.messageBytesMax ?? RPC_MESSAGE_BYTES_MAX_DEFAULT;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? RPC_DEFAULT_TIMEOUT_MS.default;
  }

  /** The transport of one simulated node (host). */
  transport(host: string): SimTransport {
    return new SimTransport(this, host);
  }

  setFaults(f: Partial<SimFaults>): void {
    this.faults = { ...this.faults, ...f };
  }

  // ---- partitions -------------------------------------------------------------------------------

  /** One-way cut: packets from `from` to `to` are lost (hosts or addresses). */
  cut(from: string, to: string): void {
    this.cuts.add(linkKey(hostOf(from), hostOf(to)));
  }

  /** Cut every link between the two groups, both ways. */
  partition(groupA: readonly string[], groupB: readonly string[]): void {
    for (const a of groupA) {
      for (const b of groupB) {
        this.cut(a, b);
        this.cut(b, a);
      }
    }
  }

  /** Cut `addr` from every host the network knows. */
  isolate(addr: string): void {
    const h = hostOf(addr);
    const others = new Set<string>();
    for (const s of this.servers.values()) others.add(hostOf(s.address));
    for (const c of this.clients.values()) others.add(c.host);
    others.delete(h);
    this.partition([h], [...others]);
  }

  heal(): void {
    this.cuts.clear();
  }

  isCut(from: string, to: string): boolean {
    return this.cuts.has(linkKey(hostOf(from), hostOf(to)));
  }

  // ---- scheduling -------------------------------------------------------------------------------

  /** Packets scheduled (ready or not). */
  get inFlight(): number {
    return this.queue.size;
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.pending.size;
  }

  private schedule(p: Omit<Packet, 'seq' | 'atMs' | 'order'>): void {
    this.stats.sent++;
    if (this.queue.size >= SIM_PACKETS_MAX || this.rng.chance(this.faults.dropProb)) {
      this.stats.dropped++;
      return;
    }
    const copies = this.rng.chance(this.faults.dupProb) ? 2 : 1;
    if (copies === 2) this.stats.duplicated++;
    for (let i = 0; i < copies; i++) {
      const f = this.faults;
      const delay = f.delayMaxMs > f.delayMinMs ? f.delayMinMs + this.rng.next() * (f.delayMaxMs - f.delayMinMs) : f.delayMinMs;
      const link = linkKey(p.fromHost, p.toHost);
      const seq = ++this.seq;
      let atMs = this.clock.monoMs() + delay;
      let order = seq;
      if (this.rng.chance(f.reorderProb)) {
        order = seq - 1 - this.rng.int(Math.max(1, f.reorderWindow));
      } else {
        // Without reordering a link delivers in send order, like one TCP connection.
        atMs = Math.max(atMs, this.lastAtMs.get(link) ?? 0);
        this.lastAtMs.set(link, atMs);
      }
      this.queue.push({ seq, atMs, order, ...p });
    }
  }

  /** Deliver the next packet that is due; false when none is due. Synchronous: handlers run later. */
  deliverNext(): boolean {
    this.checkTimeouts();
    const p = this.queue.peek();
    if (!p || p.atMs > this.clock.monoMs()) return false;
    this.queue.pop();
    if (this.isCut(p.fromHost, p.toHost)) {
      this.stats.cutDropped++;
      return true;
    }
    this.stats.delivered++;
    if (p.kind === 'request' || p.kind === 'oneway') {
      const s = this.servers.get(p.to);
      if (!s || (this.epochs.get(p.to) ?? 0) !== p.epoch) return true; // server gone; its callers were failed at stop
      s.receive(p);
    } else {
      this.answer(p);
    }
    return true;
  }

  /**
   * Deliver everything that is due, letting handlers settle in between (they are async), until
   * nothing due remains. Does not move the clock. Returns the number of packets delivered.
   */
  async deliverAll(maxPackets = SIM_PACKETS_MAX): Promise<number> {
    let n = 0;
    for (let round = 0; round < DELIVER_ALL_ROUNDS_MAX; round++) {
      while (n < maxPackets && this.deliverNext()) n++;
      await new Promise<void>((resolve) => setImmediate(resolve));
      const next = this.queue.peek();
      if (n >= maxPackets || !next || next.atMs > this.clock.monoMs()) break;
    }
    return n;
  }

  /** Move simulated time forward (firing call deadlines), delivering what becomes due on the way. */
  async advance(ms: number, stepMs = 1): Promise<void> {
    const end = this.clock.monoMs() + ms;
    await this.deliverAll();
    while (this.clock.monoMs() < end) {
      this.clock.advanceMs(Math.min(stepMs, end - this.clock.monoMs()));
      await this.deliverAll();
    }
  }

  /** Drive the network (delivering, then advancing time by stepMs) until `p` settles; bounded by maxSimMs. */
  async settle<T>(p: Promise<T>, opts: { stepMs?: number; maxSimMs?: number } = {}): Promise<T> {
    let done = false;
    const watched = p.finally(() => {
      done = true;
    });
    watched.catch(() => undefined);
    const stepMs = opts.stepMs ?? 1;
    const end = this.clock.monoMs() + (opts.maxSimMs ?? this.defaultTimeoutMs * 2);
    await this.deliverAll();
    while (!done && this.clock.monoMs() < end) {
      this.clock.advanceMs(stepMs);
      await this.deliverAll();
    }
    if (!done) throw new DbError(ErrorCode.TIMED_OUT, `simulation: promise did not settle within ${opts.maxSimMs ?? this.defaultTimeoutMs * 2} simulated ms`);
    return watched;
  }

  private checkTimeouts(): void {
    const now = this.clock.monoMs();
    if (now === this.lastTimeoutCheckMs) return; // deadlines only pass when the clock moves
    this.lastTimeoutCheckMs = now;
    for (const [id, c] of this.pending) {
      if (c.deadlineMs <= now) {
        this.pending.delete(id);
        // heard: another answer from that server reached this client meanwhile (as the WebSocket client tells).
        const heard = (this.answersHeard.get(`${c.client.id}|${c.toAddress}`) ?? 0) > c.answersAtStart;
        c.reject(new DbError(ErrorCode.TIMED_OUT, `${c.service}.${c.method} to ${c.toAddress} timed out after ${c.timeoutMs} ms`, { address: c.toAddress, timeoutMs: c.timeoutMs, heard }));
      }
    }
  }

  private answer(p: Packet): void {
    const c = this.pending.get(p.callId);
    if (!c || c.client.id !== p.clientId) return; // timed out, or a duplicate
    this.pending.delete(p.callId);
    const heardKey = `${c.client.id}|${c.toAddress}`;
    this.answersHeard.set(heardKey, (this.answersHeard.get(heardKey) ?? 0) + 1);
    if (p.kind === 'error') {
      c.reject(DbError.fromWire(p.error ?? { code: ErrorCode.INTERNAL, message: 'error without error' }));
      return;
    }
    let v: unknown;
    try {
      v = c.codec.decode(p.payload);
    } catch (e) {
      c.reject(new DbError(ErrorCode.MALFORMED_FRAME, `response of ${c.service}.${c.method} does not decode: ${(e as Error).message}`));
      return;
    }
    c.resolve(v);
  }

  // ---- endpoints (used by SimRpcServer / SimRpcClient) ------------------------------------------

  /** @internal */
  bind(s: SimRpcServer, host: string, port: number): string {
    let p = port;
    if (p === 0) {
      p = this.nextPort.get(host) ?? FIRST_EPHEMERAL_PORT;
      while (this.servers.has(`${host}:${p}`)) p++;
      this.nextPort.set(host, p + 1);
    }
    const address = `${host}:${p}`;
    if (this.servers.has(address)) throw new DbError(ErrorCode.IO_ERROR, `cannot listen on ${address}: address in use`, { address });
    this.servers.set(address, s);
    this.epochs.set(address, (this.epochs.get(address) ?? 0) + 1);
    return address;
  }

  /** @internal A stopped server's callers see the connection drop, as over TCP. */
  unbind(address: string): void {
    this.servers.delete(address);
    this.epochs.set(address, (this.epochs.get(address) ?? 0) + 1);
    for (const [id, c] of this.pending) {
      if (c.toAddress === address) {
        this.pending.delete(id);
        c.reject(new DbError(ErrorCode.NETWORK_ERROR, `connection to ${address} lost during ${c.service}.${c.method}`, { address, sent: true }, { retryable: false }));
      }
    }
  }

  /** @internal */
  registerClient(c: SimRpcClient): number {
    const id = this.nextClientId++;
    this.clients.set(id, c);
    return id;
  }

  /** @internal */
  closeClient(c: SimRpcClient): void {
    this.clients.delete(c.id);
    for (const [id, p] of this.pending) {
      if (p.client === c) {
        this.pending.delete(id);
        p.reject(new DbError(ErrorCode.SHUTTING_DOWN, 'RPC client is closed'));
      }
    }
  }

  /** @internal */
  startCall(c: SimRpcClient, address: string, service: string, method: string, payload: Uint8Array, codec: Codec<unknown>, timeoutMs: number, serverTimeoutMs = timeoutMs): Promise<unknown> {
    const target = hostOf(address);
    if (!this.servers.has(address) && !this.isCut(c.host, target)) {
      // Like a refused TCP connect: certainly not sent, safe to retry.
      return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `cannot connect to ${address}`, { address, sent: false }, { retryable: true }));
    }
    const callId = this.nextCallId++;
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(callId, { client: c, toAddress: address, codec, deadlineMs: this.clock.monoMs() + timeoutMs, timeoutMs, answersAtStart: this.answersHeard.get(`${c.id}|${address}`) ?? 0, service, method, resolve, reject });
      this.schedule({
        kind: 'request',
        fromHost: c.host,
        toHost: target,
        to: address,
        epoch: this.epochs.get(address) ?? 0,
        callId,
        service,
        method,
        payload,
        timeoutMs: serverTimeoutMs,
        clientId: c.id,
      });
    });
  }

  /** @internal */
  sendOneway(c: SimRpcClient, address: string, service: string, method: string, payload: Uint8Array): void {
    if (!this.servers.has(address)) return;
    this.schedule({
      kind: 'oneway',
      fromHost: c.host,
      toHost: hostOf(address),
      to: address,
      epoch: this.epochs.get(address) ?? 0,
      callId: 0,
      service,
      method,
      payload,
      timeoutMs: 0,
      clientId: c.id,
    });
  }

  /** @internal */
  reply(server: SimRpcServer, req: Packet, payload: Uint8Array, error: WireError | undefined): void {
    if (this.servers.get(server.address) !== server) return; // stopped meanwhile: the connection is gone
    const client = this.clients.get(req.clientId);
    if (!client) return;
    this.schedule({
      kind: error ? 'error' : 'response',
      fromHost: hostOf(server.address),
      toHost: client.host,
      to: String(client.id),
      epoch: 0,
      callId: req.callId,
      service: req.service,
      method: req.method,
      payload,
      error,
      timeoutMs: 0,
      clientId: req.clientId,
    });
  }

  get logger(): Logger {
    return this.log;
  }
}

/** The Transport of one simulated host. */
export class SimTransport implements Transport {
  constructor(
    readonly network: SimNetwork,
    readonly host: string,
  ) {}

  createServer(opts: ServerOptions): SimRpcServer {
    return new SimRpcServer(this.network, opts);
  }

  createClient(): SimRpcClient {
    return new SimRpcClient(this.network, this.host);
  }
}
