/**
 * rpc/host-resolver.ts: a name is looked up on the thread pool (getaddrinfo) once, then answered from
 * memory; an old address is re-resolved in the background through DNS only, and never by getaddrinfo
 * while DNS times out (a container cut off from its network: getaddrinfo would hold libuv's one thread
 * for 10 s); a failed re-resolution keeps the old address. Driven with stand-in resolvers and clock.
 */
import * as net from 'node:net';
import { describe, expect, it } from 'vitest';
import { HostResolver } from '../../rpc/host-resolver';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

type Addr = { address: string; family: 4 | 6 };
const v4 = (address: string): Addr[] => [{ address, family: 4 }];

function harness(opts: { lookup?: (h: string) => Promise<Addr[]>; dns?: (h: string) => Promise<Addr[]> } = {}) {
  let now = 0;
  const calls = { lookup: 0, dns: 0 };
  const r = new HostResolver({
    lookup: (h) => {
      calls.lookup++;
      return opts.lookup ? opts.lookup(h) : Promise.resolve(v4('10.0.0.1'));
    },
    resolveDns: (h) => {
      calls.dns++;
      return opts.dns ? opts.dns(h) : Promise.resolve(v4('10.0.0.2'));
    },
    nowMs: () => now,
    refreshMs: 1_000,
  });
  return {
    r,
    calls,
    advance: (ms: number) => (now += ms),
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('host resolver', () => {
  it('host resolver: concurrent first connects share one getaddrinfo; later ones are answered from memory without any lookup', async () => {
    let resolveLookup: ((v: Addr[]) => void) | undefined;
    const h = harness({ lookup: () => new Promise((res) => (resolveLookup = res)) });
    const a = h.r.resolve('n0');
    const b = h.r.resolve('n0');
    expect(h.calls.lookup).toBe(1);
    resolveLookup!(v4('10.0.0.7'));
    expect(await a).toEqual(v4('10.0.0.7'));
    expect(await b).toEqual(v4('10.0.0.7'));
    for (let i = 0; i < 5; i++) expect(await h.r.resolve('n0')).toEqual(v4('10.0.0.7'));
    expect(h.calls).toEqual({ lookup: 1, dns: 0 });
  });

  it('host resolver: an address older than refreshMs is still answered at once, and re-resolved in the background through DNS (a new address is used from then on)', async () => {
    const h = harness();
    expect((await h.r.resolve('n0'))[0]!.address).toBe('10.0.0.1');
    h.advance(1_500);
    expect((await h.r.resolve('n0'))[0]!.address).toBe('10.0.0.1'); // not waiting for the refresh
    await settle();
    expect(h.calls).toEqual({ lookup: 1, dns: 1 });
    expect((await h.r.resolve('n0'))[0]!.address).toBe('10.0.0.2');
    expect(h.calls).toEqual({ lookup: 1, dns: 1 }); // fresh again
  });

  it('host resolver: while DNS times out (a cut-off container) the refresh never falls back to getaddrinfo, keeps the old address, and waits another refreshMs before trying again', async () => {
    const h = harness({ dns: () => Promise.reject(errno('ETIMEOUT')) });
    await h.r.resolve('n0');
    h.advance(1_500);
    for (let i = 0; i < 10; i++) expect((await h.r.resolve('n0'))[0]!.address).toBe('10.0.0.1');
    await settle();
    expect(h.calls).toEqual({ lookup: 1, dns: 1 }); // one refresh in flight at a time, and no getaddrinfo
    expect((await h.r.resolve('n0'))[0]!.address).toBe('10.0.0.1');
    await settle();
    expect(h.calls.dns).toBe(1); // failed just now: not again before refreshMs
    h.advance(1_500);
    await h.r.resolve('n0');
    await settle();
    expect(h.calls).toEqual({ lookup: 1, dns: 2 });
  });

  it('host resolver: when DNS answers that it does not know the name (an /etc/hosts name), the refresh asks getaddrinfo', async () => {
    let n = 0;
    const h = harness({ dns: () => Promise.reject(errno('ENOTFOUND')), lookup: () => Promise.resolve(v4(`10.0.1.${++n}`)) });
    expect((await h.r.resolve('box'))[0]!.address).toBe('10.0.1.1');
    h.advance(1_500);
    await h.r.resolve('box');
    await settle();
    await settle();
    expect(h.calls).toEqual({ lookup: 2, dns: 1 });
    expect((await h.r.resolve('box'))[0]!.address).toBe('10.0.1.2');
  });

  it('host resolver: a failed first lookup is not remembered: the next connect looks up again', async () => {
    let fail = true;
    const h = harness({ lookup: () => (fail ? Promise.reject(errno('EAI_AGAIN')) : Promise.resolve(v4('10.0.0.9'))) });
    await expect(h.r.resolve('n1')).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    fail = false;
    expect((await h.r.resolve('n1'))[0]!.address).toBe('10.0.0.9');
    expect(h.calls.lookup).toBe(2);
  });

  it('host resolver: as net.connect\'s lookup it answers both call shapes (all: true gives every address, for Node\'s happy-eyeballs connect) and a real connect to "localhost" goes through it', async () => {
    const both: Addr[] = [{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }];
    const h = harness({ lookup: (host) => Promise.resolve(host === 'x' ? both : v4('127.0.0.1')) });
    const one = await new Promise<unknown[]>((res) => h.r.lookup('x', {}, (...a: unknown[]) => res(a)));
    expect(one).toEqual([null, '::1', 6]);
    const all = await new Promise<unknown[]>((res) => h.r.lookup('x', { all: true }, (...a: unknown[]) => res(a)));
    expect(all).toEqual([null, both]);
    const server = net.createServer((s) => s.end('hi'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const got = await new Promise<string>((res, rej) => {
        const s = net.connect({ host: 'localhost', port, lookup: h.r.lookup });
        let d = '';
        s.on('data', (b) => (d += String(b)));
        s.on('end', () => res(d));
        s.on('error', rej);
      });
      expect(got).toBe('hi');
      expect(h.calls.lookup).toBe(2); // 'x' once (its second call from memory), then 'localhost'
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
