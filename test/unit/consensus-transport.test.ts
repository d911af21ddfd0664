/**
 * The per-destination Raft batching (tserver/consensus-transport.ts): messages of one turn to one
 * server leave as one batch, split by count and by encoded bytes so a frame never grows past what
 * the RPC layer accepts (a single larger message goes alone), and arrive in order.
 */
import { describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { NodeId } from '../../common/ids';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { encodeMessage } from '../../raft/message-codec';
import { flushTurnNow, scheduleRaftPass } from '../../raft/raft-turn';
import type { Message } from '../../raft/types';
import type { RpcClient } from '../../rpc/types';
import { ConsensusTransport, RAFT_BATCH_BYTES_MAX, RAFT_SEND_AT_ONCE } from '../../tserver/consensus-transport';
import type { RaftBatch } from '../../tserver/raft-batch-codec';

function transport(flags = new Flags()): { t: ConsensusTransport; sent: Array<{ addr: string; batch: RaftBatch }> } {
  const sent: Array<{ addr: string; batch: RaftBatch }> = [];
  const client = { send: (addr: string, _m: unknown, batch: RaftBatch) => sent.push({ addr, batch }) } as unknown as RpcClient;
  const t = new ConsensusTransport({
    selfUuid: 'a',
    selfAddress: () => '127.0.0.1:9100',
    learnAddress: () => undefined,
    client,
    flags,
    rng: new SeededRng(1),
    log: silentLogger(),
    addressOf: (uuid) => (uuid === 'b' ? '127.0.0.2:9100' : uuid === 'c' ? '127.0.0.3:9100' : undefined),
    dispatch: () => true,
  });
  return { t, sent };
}

const append = (to: string, index: number, bytes: number): Message => ({
  type: 'append',
  from: NodeId('a'),
  to: NodeId(to),
  term: 2,
  prevIndex: index - 1,
  prevTerm: 2,
  commit: 0,
  entries: [{ term: 2, index, type: 'normal', data: new Uint8Array(bytes).fill(index & 0xff) }],
});
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * A pass that queues appends for two followers, calls flushTurnNow, then queues one more; returns how
 * many frames had left when flushTurnNow returned, after the turn and the iteration batch ran.
 */
async function passSendingNow(t: ConsensusTransport, sent: unknown[]): Promise<number[]> {
  const seen: number[] = [];
  scheduleRaftPass(() => {
    t.send('g2', [append('b', 4, 10), append('c', 4, 10)]);
    flushTurnNow();
    seen.push(sent.length);
    t.send('g3', [append('b', 9, 10)]);
  });
  await turn();
  await turn();
  return seen;
}

describe('consensus transport', () => {
  it('transport: one turn to one server is one batch; per server, in order', async () => {
    const { t, sent } = transport();
    t.send('g1', [append('b', 1, 10), append('c', 1, 10)]);
    t.send('g2', [append('b', 5, 10)]);
    await turn();
    expect(sent.map((s) => [s.addr, s.batch.messages.map((m) => m.groupId)])).toEqual([
      ['127.0.0.2:9100', ['g1', 'g2']],
      ['127.0.0.3:9100', ['g1']],
    ]);
  });

  it('transport: large messages of one turn are split into batches of at most RAFT_BATCH_BYTES_MAX (a larger one alone), in order', async () => {
    const { t, sent } = transport();
    const mib = 1 << 20;
    // 20 entries of 3 MiB for one follower in one turn (60 MiB), then one of 10 MiB, then a small one.
    t.send('g1', Array.from({ length: 20 }, (_, i) => append('b', i + 1, 3 * mib)));
    t.send('g1', [append('b', 21, 10 * mib), append('b', 22, 100)]);
    await turn();
    const sizes = sent.map((s) => s.batch.messages.reduce((n, m) => n + m.message.length, 0));
    const counts = sent.map((s) => s.batch.messages.length);
    expect(counts).toEqual([2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1]);
    for (const [i, n] of sizes.entries()) if (counts[i]! > 1) expect(n).toBeLessThanOrEqual(RAFT_BATCH_BYTES_MAX);
    expect(sizes[10]).toBeGreaterThan(RAFT_BATCH_BYTES_MAX); // the 10 MiB entry alone
    // Every message once, in the order sent.
    const all = sent.flatMap((s) => s.batch.messages.map((m) => m.message));
    expect(all.length).toBe(22);
    for (const [i, m] of all.entries()) expect(Buffer.from(m).equals(Buffer.from(encodeMessage(append('b', i + 1, i === 20 ? 10 * mib : i === 21 ? 100 : 3 * mib))))).toBe(true);
  });

  it('transport: a leader pass that sends before its fdatasync (flushTurnNow) gets its frames out at once, with what was queued before', async () => {
    const { t, sent } = transport();
    scheduleRaftPass(() => t.send('g1', [append('c', 3, 10)]));
    const seen = await passSendingNow(t, sent);
    expect(seen).toEqual([2]);
    expect(sent.map((s) => [s.addr, s.batch.messages.map((m) => m.groupId)])).toEqual([
      ['127.0.0.3:9100', ['g1', 'g2']],
      ['127.0.0.2:9100', ['g2']],
      ['127.0.0.2:9100', ['g3']],
    ]);
    t.stop();
  });

  it('transport: with raft_send_at_once off, flushTurnNow sends nothing: every message waits for the iteration batch', async () => {
    const flags = new Flags();
    flags.setFromString(RAFT_SEND_AT_ONCE.name, false);
    const { t, sent } = transport(flags);
    const seen = await passSendingNow(t, sent);
    expect(seen).toEqual([0]);
    expect(sent.map((s) => [s.addr, s.batch.messages.map((m) => m.groupId)])).toEqual([
      ['127.0.0.2:9100', ['g2', 'g3']],
      ['127.0.0.3:9100', ['g2']],
    ]);
    t.stop();
  });
});
