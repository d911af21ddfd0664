/**
 * Raft traffic between servers. Every Raft message this server produces for one destination during
 * one event-loop turn — across all tablets — goes out as ONE RaftBatchPB on the one connection to that
 * server (rpc oneway: best effort and ordered per connection, which is what Raft expects of a network).
 * The two messages a write waits for leave at once (raft_send_at_once, raft/raft-turn.ts flushTurnNow).
 * Incoming batches are decoded and dispatched to their groups; a message for an unknown group is
 * dropped with a log line (the master will create or delete the replica).
 *
 * Fault injection (runtime TEST_ flags): TEST_drop_traffic_peers (drop everything to/from those RPC
 * addresses), TEST_drop_raft_messages_probability, TEST_follower_reject_update_consensus_requests.
 */
import { defineFlag, FlagTag, type Flags } from '../common/flags';
import type { Logger } from '../common/log';
import type { Rng } from '../common/rng';
import { decodeMessage, encodeMessage, onRaftSendNow, type Message } from '../raft';
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
/**
 * `raft_send_at_once` (runtime, default true): the two messages a write waits for — a leader's
 * AppendEntries before its own fdatasync, a follower's ack after one — leave at once, with whatever
 * is queued then (raft/raft-turn.ts flushTurnNow); every other message goes with the loop
 * iteration's batch per destination, which merges a server's appends with its acks of other tablets.
 * Off: those two wait for the batch too (a setImmediate; one queued while the check phase runs is
 * the next iteration's). The A/B switch; figures in bench/results/2026-12-07-put-latency.md.
 */
export const RAFT_SEND_AT_ONCE = defineFlag({
  name: 'raft_send_at_once',
  type: 'bool',
  default: true,
  help: "Send a leader's AppendEntries before its own fdatasync, and a follower's ack right after its fdatasync, each in a frame of its own instead of the event-loop iteration's batch per destination.",
  tags: [FlagTag.runtime],
});
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
    // A message a write waits for (raft/raft-turn.ts flushTurnNow) takes what is queued with it.
    this.stopTurnHook = onRaftSendNow(() => {
      if (this.queues.size > 0 && this.deps.flags.get(RAFT_SEND_AT_ONCE)) this.flush();
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

  /** Queue messages of one group; they leave with this loop iteration's batch (or at once: flushTurnNow). */
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
    if (this.queues.size > 0 && !this.flushScheduled) this.scheduleFlush();
  }

  private scheduleFlush(): void {
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
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
