/**
 * Raft traffic between servers. Every Raft message this server produces for one destination during
 * one event-loop turn — across all tablets — goes out as ONE RaftBatchPB on the one connection to that
 * server (rpc oneway: best effort and ordered per connection, which is what Raft expects of a network).
 * What the processing passes of a Raft turn send (raft/raft-turn.ts) leaves as that turn ends, not a
 * loop iteration later (a leader's AppendEntries are on every write's critical path).
 * Incoming batches are decoded and dispatched to their groups; a message for an unknown group is
 * dropped with a log line (the master will create or delete the replica).
 *
 * Fault injection (runtime TEST_ flags): TEST_drop_traffic_peers (drop everything to/from those RPC
 * addresses), TEST_drop_raft_messages_probability, TEST_follower_reject_update_consensus_requests.
 */
import type { Flags } from '../common/flags';
import type { Logger } from '../common/log';
import type { Rng } from '../common/rng';
import { decodeMessage, encodeMessage, inRaftTurn, onRaftTurnEnd, type Message } from '../raft';
import type { OnewayDef, RpcClient, RpcContext, RpcServer } from '../rpc';
import { raftBatchCodec, type RaftBatch, type RaftEnvelope } from './raft-batch-codec';
import { traceStage } from '../common/stage-trace';
import { TEST_DROP_RAFT_MESSAGES_PROBABILITY, TEST_DROP_TRAFFIC_PEERS, TEST_FOLLOWER_REJECT_UPDATE_CONSENSUS_REQUESTS } from './tserver-flags';

export const RAFT_BATCH: OnewayDef<RaftBatch> = { service: 'tessera.ConsensusService', method: 'RaftBatch', msg: raftBatchCodec };

/** Messages queued for one destination before the batch is flushed without waiting for the turn to end. */
export const RAFT_BATCH_MESSAGES_MAX = 4096;
/**
 * Encoded bytes one batch carries at most: a message that would pass it goes in the next batch (a
 * single larger message goes alone). Raft caps a message at about 1 MiB but one large entry (a 4 MiB
 * write) travels whole, and a leader may send many in one turn; together they must not make a frame
 * over rpc_max_message_size, which would be refused and dropped each time Raft resends it.
 */
export const RAFT_BATCH_BYTES_MAX = 8 * 1024 * 1024;
/** At most one "unknown group" / "unknown peer" log line per this many drops. */
const DROP_LOG_EVERY = 1000;

export interface ConsensusTransportDeps {
  selfUuid: string;
  /** This server's RPC address (sent with every batch; known after the RPC server started). */
  selfAddress(): string;
  /** A batch told us where a server listens. */
  learnAddress(uuid: string, address: string): void;
  client: RpcClient;
  flags: Flags;
  rng: Rng;
  log: Logger;
  /** RPC address of a server by uuid (from tablet peers, config changes, heartbeats). */
  addressOf(uuid: string): string | undefined;
  /** Deliver to the group; false when this server hosts no such group. */
  dispatch(groupId: string, m: Message): boolean;
}

export class ConsensusTransport {
  private readonly queues = new Map<string, { envelopes: RaftEnvelope[]; bytes: number }>();
  private flushScheduled = false;
  private readonly stopTurnHook: () => void;
  private stopped = false;
  readonly metrics = { batchesSent: 0, messagesSent: 0, batchesReceived: 0, messagesReceived: 0, dropped: 0, unknownGroup: 0, unknownPeer: 0 };

  constructor(private readonly deps: ConsensusTransportDeps) {
    // Everything queued goes: at a turn's end, or when a leader's pass sends before its fdatasync
    // (raft/raft-turn.ts flushTurnNow; then also what a pass outside a turn queued).
    this.stopTurnHook = onRaftTurnEnd(() => {
      if (this.queues.size > 0) this.flush();
    });
  }

  register(server: RpcServer): void {
    server.onOneway(RAFT_BATCH, (batch, ctx) => this.onBatch(batch, ctx));
  }

  private dropPeers(): Set<string> {
    const v = this.deps.flags.get(TEST_DROP_TRAFFIC_PEERS);
    return v ? new Set(v.split(',').map((s) => s.trim()).filter(Boolean)) : new Set();
  }

  private randomDrop(): boolean {
    const p = this.deps.flags.get(TEST_DROP_RAFT_MESSAGES_PROBABILITY);
    return p > 0 && this.deps.rng.next() < p;
  }

  /** Queue messages of one group; they leave at the end of this Raft turn, or of this event-loop iteration. */
  send(groupId: string, msgs: readonly Message[]): void {
    if (this.stopped) return;
    const drop = this.dropPeers();
    for (const m of msgs) {
      const addr = this.deps.addressOf(m.to);
      if (!addr) {
        if (this.metrics.unknownPeer++ % DROP_LOG_EVERY === 0) this.deps.log.warn({ group: groupId, to: m.to }, 'raft message to a peer with unknown address dropped');
        continue;
      }
      if (drop.has(addr) || this.randomDrop()) {
        this.metrics.dropped++;
        continue;
      }
      const message = encodeMessage(m);
      let q = this.queues.get(addr);
      if (q && q.bytes + message.length > RAFT_BATCH_BYTES_MAX) {
        this.flushOne(addr);
        q = undefined;
      }
      if (!q) this.queues.set(addr, (q = { envelopes: [], bytes: 0 }));
      q.envelopes.push({ groupId, message });
      q.bytes += message.length;
      if (q.envelopes.length >= RAFT_BATCH_MESSAGES_MAX) this.flushOne(addr);
    }
    if (this.queues.size === 0) return;
    // Sent by a processing pass: the frames leave when the turn's passes are done, in this loop
    // iteration (a setImmediate queued now would wait for the next one). Else at this iteration's end.
    if (!inRaftTurn() && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  private flush(): void {
    for (const addr of [...this.queues.keys()]) this.flushOne(addr);
  }

  private flushOne(addr: string): void {
    const q = this.queues.get(addr)?.envelopes;
    this.queues.delete(addr);
    if (!q || q.length === 0 || this.stopped) return;
    traceStage('transport.flush', '-', q.length);
    try {
      this.deps.client.send(addr, RAFT_BATCH, { fromUuid: this.deps.selfUuid, fromAddress: this.deps.selfAddress(), messages: q });
      this.metrics.batchesSent++;
      this.metrics.messagesSent += q.length;
    } catch (e) {
      // Backpressure or a closed connection: Raft retransmits, so dropping is the right answer.
      this.metrics.dropped += q.length;
      this.deps.log.debug({ err: e, to: addr }, 'raft batch not sent');
    }
  }

  private onBatch(batch: RaftBatch, _ctx: RpcContext): void {
    if (this.stopped) return;
    this.metrics.batchesReceived++;
    if (batch.fromAddress && batch.fromUuid) this.deps.learnAddress(batch.fromUuid, batch.fromAddress);
    const fromAddr = this.deps.addressOf(batch.fromUuid);
    if (fromAddr && this.dropPeers().has(fromAddr)) {
      this.metrics.dropped += batch.messages.length;
      return;
    }
    const rejectAppends = this.deps.flags.get(TEST_FOLLOWER_REJECT_UPDATE_CONSENSUS_REQUESTS);
    for (const env of batch.messages) {
      let m: Message;
      try {
        m = decodeMessage(env.message);
      } catch (e) {
        this.metrics.dropped++;
        this.deps.log.warn({ err: e, from: batch.fromUuid, group: env.groupId }, 'undecodable raft message dropped');
        continue;
      }
      if (this.randomDrop() || (rejectAppends && m.type === 'append')) {
        this.metrics.dropped++;
        continue;
      }
      this.metrics.messagesReceived++;
      if (!this.deps.dispatch(env.groupId, m)) {
        if (this.metrics.unknownGroup++ % DROP_LOG_EVERY === 0) this.deps.log.info({ group: env.groupId, from: batch.fromUuid }, 'raft message for a group this server does not host dropped');
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.stopTurnHook();
    this.queues.clear();
  }
}
