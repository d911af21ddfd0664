import { describe, expect, it } from 'vitest';
import { ErrorCode, isDbError, ManualClock, SeededRng } from '../../common';
import { SimNetwork } from '../../rpc/sim-transport';
import { ECHO, NOTE, runTransportCompliance, startEchoServer, type TransportHarness } from './rpc-transport-compliance';

const UNTIL_SIM_MS_MAX = 60_000;

function simHarness(seed = 1): TransportHarness & { network: SimNetwork } {
  const network = new SimNetwork({ rng: new SeededRng(seed), clock: new ManualClock() });
  const hosts = ['n0', 'n1', 'n2'];
  return {
    network,
    transport: (node, opts) => {
      // A size limit is per network in the simulation; a harness asking for one gets a fresh network.
      if (opts?.messageBytesMax !== undefined) (network as { messageBytesMax: number }).messageBytesMax = opts.messageBytesMax;
      return network.transport(hosts[node]!);
    },
    bindHost: (node) => hosts[node]!,
    drive: (p) => network.settle(p, { maxSimMs: 120_000 }),
    until: async (cond, what) => {
      const end = network.clock.monoMs() + UNTIL_SIM_MS_MAX;
      await network.deliverAll();
      while (!cond()) {
        if (network.clock.monoMs() >= end) throw new Error(`simulation: ${what} did not happen within ${UNTIL_SIM_MS_MAX} ms`);
        await network.advance(1);
      }
    },
    pause: (ms) => network.advance(ms),
    nowMs: () => network.clock.monoMs(),
    cleanup: async () => undefined,
  };
}

runTransportCompliance('sim', () => simHarness());

describe('sim network faults', () => {
  it('sim: a partition makes calls time out and one-ways vanish; heal restores them', async () => {
    const h = simHarness(7);
    const es = await startEchoServer(h.transport(0), 'n0', 9100);
    const client = h.transport(1).createClient();
    h.network.partition(['n0'], ['n1']);
    const p = client.call(es.server.address, ECHO, { text: 'x' }, { timeoutMs: 200 });
    client.send(es.server.address, NOTE, { text: 'lost' });
    await expect(h.drive(p)).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
    expect(es.notes).toEqual([]);
    h.network.heal();
    expect((await h.drive(client.call(es.server.address, ECHO, { text: 'y' }, { timeoutMs: 200 }))).text).toBe('y');
  });

  it('sim: a one-way cut blocks answers only in the cut direction', async () => {
    const h = simHarness(8);
    const es = await startEchoServer(h.transport(0), 'n0', 9100);
    const client = h.transport(1).createClient();
    h.network.cut('n0', 'n1'); // requests get through, answers do not
    const p = client.call(es.server.address, ECHO, { text: 'x' }, { timeoutMs: 200 });
    client.send(es.server.address, NOTE, { text: 'arrives' });
    await expect(h.drive(p)).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
    expect(es.notes.map((n) => n.text)).toEqual(['arrives']);
  });

  it('sim: isolate cuts a node from every other node', async () => {
    const h = simHarness(9);
    const es = await startEchoServer(h.transport(0), 'n0', 9100);
    const c1 = h.transport(1).createClient();
    const c2 = h.transport(2).createClient();
    h.network.isolate('n0:9100');
    for (const c of [c1, c2]) {
      await expect(h.drive(c.call(es.server.address, ECHO, { text: 'x' }, { timeoutMs: 100 }))).rejects.toMatchObject({ code: ErrorCode.TIMED_OUT });
    }
  });

  it('sim: drop, duplicate, reorder and delay replay exactly under the same seed', async () => {
    const run = async (seed: number): Promise<string[]> => {
      const h = simHarness(seed);
      h.network.setFaults({ dropProb: 0.2, dupProb: 0.2, reorderProb: 0.3, delayMinMs: 1, delayMaxMs: 20 });
      const es = await startEchoServer(h.transport(0), 'n0', 9100);
      const client = h.transport(1).createClient();
      for (let i = 0; i < 200; i++) client.send(es.server.address, NOTE, { text: String(i) });
      await h.network.advance(100);
      return es.notes.map((n) => n.text ?? '');
    };
    const a = await run(42);
    const b = await run(42);
    expect(a).toEqual(b);
    // Faults really happened: some lost, some twice, some out of order.
    expect(new Set(a).size).toBeLessThan(200);
    expect(a.length).toBeGreaterThan(new Set(a).size);
    const nums = a.map(Number);
    expect(nums.some((v, i) => i > 0 && v < nums[i - 1]!)).toBe(true);
    const c = await run(43);
    expect(c).not.toEqual(a);
  });

  it('sim: duplicated requests run twice on the server but the caller gets one answer', async () => {
    const h = simHarness(3);
    h.network.setFaults({ dupProb: 1 });
    const es = await startEchoServer(h.transport(0), 'n0', 9100);
    let runs = 0;
    es.server.handle({ ...ECHO, method: 'Count' }, async (req) => {
      runs++;
      return req as never;
    });
    const client = h.transport(1).createClient();
    const r = await h.drive(client.call(es.server.address, { ...ECHO, method: 'Count' }, { text: 'd' }, { timeoutMs: 1000 }));
    expect(r.text).toBe('d');
    await h.network.deliverAll();
    expect(runs).toBe(2);
  });

  it('sim: call to an address nobody listens on fails at once with retryable NETWORK_ERROR', async () => {
    const h = simHarness(4);
    const client = h.transport(1).createClient();
    const e: unknown = await client.call('n5:9100', ECHO, { text: 'x' }).catch((x: unknown) => x);
    expect(isDbError(e, ErrorCode.NETWORK_ERROR)).toBe(true);
    expect((e as { retryable: boolean }).retryable).toBe(true);
  });
});
