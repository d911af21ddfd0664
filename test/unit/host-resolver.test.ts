/**
 * rpc/host-resolver.ts: a name is resolved in getaddrinfo's order — /etc/hosts, DNS, other system
 * sources — but off libuv's thread pool where it can be (getaddrinfo runs there and, while DNS times
 * out in a container cut off from its network, would hold the one thread for 10 s); once found the
 * addresses are answered from memory, re-resolved in the background when old, and kept when that
 * fails. Driven with stand-in sources and clock, and once through a real net.connect.
 */
import * as net from 'node:net';
import { describe, expect, it } from 'vitest';
import { HostResolver, hostsFileAddresses } from '../../rpc/host-resolver';

type Addr = { address: string; family: 4 | 6 };
const v4 = (address: string): Addr[] => [{ address, family: 4 }];

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

interface Sources {
  hosts?: (h: string) => Addr[];
  dns?: (h: string) => Promise<Addr[]>;
  lookup?: (h: string) => Promise<Addr[]>;
}

function harness(src: Sources = {}) {
  let now = 0;
  const calls = { hosts: 0, dns: 0, lookup: 0 };
  const r = new HostResolver({
    hostsFile: (h) => {
      calls.hosts++;
      return src.hosts ? src.hosts(h) : [];
    },
    resolveDns: (h) => {
      calls.dns++;
      return src.dns ? src.dns(h) : Promise.resolve(v4('10.0.0.2'));
    },
    lookup: (h) => {
      calls.lookup++;
      return src.lookup ? src.lookup(h) : Promise.resolve(v4('10.0.0.1'));
    },
    nowMs: () => now,
    refreshMs: 1_000,
  });
  return { r, calls, advance: (ms: number) => (now += ms) };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
};

describe('host resolver', () => {
  it('host resolver: hosts(5) text is read as getaddrinfo reads it (address then names, comments, case, both families, file order)', () => {
    const text = '127.0.0.1\tlocalhost\n# 10.9.9.9 n0\n10.0.0.5  N0 n0.lab  # the master\n::1 localhost ip6-localhost\nfe80::1 n0\nbogus n0\n';
    expect(hostsFileAddresses(text, 'n0')).toEqual([
      { address: '10.0.0.5', family: 4 },
      { address: 'fe80::1', family: 6 },
    ]);
    expect(hostsFileAddresses(text, 'localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(hostsFileAddresses(text, 'n1')).toEqual([]);
  });

  it('host resolver: /etc/hosts first, then DNS; getaddrinfo only when DNS answered without an address; concurrent first connects share one resolution; later ones come from memory', async () => {
    const listed = harness({ hosts: (h) => (h === 'n9' ? v4('10.0.0.9') : []) });
    expect(await listed.r.resolve('n9')).toEqual(v4('10.0.0.9'));
    expect(listed.calls).toEqual({ hosts: 1, dns: 0, lookup: 0 });

    let answer: ((v: Addr[]) => void) | undefined;
    const viaDns = harness({ dns: () => new Promise((res) => (answer = res)) });
    const a = viaDns.r.resolve('n0');
    const b = viaDns.r.resolve('n0');
    await settle();
    answer!(v4('10.0.0.7'));
    expect(await a).toEqual(v4('10.0.0.7'));
    expect(await b).toEqual(v4('10.0.0.7'));
    for (let i = 0; i < 5; i++) expect(await viaDns.r.resolve('n0')).toEqual(v4('10.0.0.7'));
    expect(viaDns.calls).toEqual({ hosts: 1, dns: 1, lookup: 0 });

    const other = harness({ dns: () => Promise.reject(errno('ENOTFOUND')) });
    expect(await other.r.resolve('myhost')).toEqual(v4('10.0.0.1'));
    expect(other.calls).toEqual({ hosts: 1, dns: 1, lookup: 1 });
  });

  it('host resolver: while DNS times out (a cut-off container) a first resolution fails at once with EAI_AGAIN, never calling getaddrinfo, and is not remembered', async () => {
    let cut = true;
    const h = harness({ dns: () => (cut ? Promise.reject(errno('ETIMEOUT')) : Promise.resolve(v4('10.0.0.3'))) });
    await expect(h.r.resolve('n1')).rejects.toMatchObject({ code: 'EAI_AGAIN', message: expect.stringContaining('DNS did not answer') });
    expect(h.calls.lookup).toBe(0);
    cut = false;
    expect(await h.r.resolve('n1')).toEqual(v4('10.0.0.3'));
  });

  it('host resolver: "localhost" goes to getaddrinfo directly (never to DNS)', async () => {
    const h = harness({ lookup: () => Promise.resolve(v4('127.0.0.1')) });
    expect(await h.r.resolve('localhost')).toEqual(v4('127.0.0.1'));
    expect(h.calls).toEqual({ hosts: 0, dns: 0, lookup: 1 });
  });

  it('host resolver: addresses older than refreshMs are still answered at once and re-resolved in the background (the new ones used from then on)', async () => {
    let n = 0;
    const h = harness({ dns: () => Promise.resolve(v4(`10.0.2.${++n}`)) });
    expect(await h.r.resolve('n0')).toEqual(v4('10.0.2.1'));
    h.advance(1_500);
    expect(await h.r.resolve('n0')).toEqual(v4('10.0.2.1')); // not waiting for the refresh
    await settle();
    expect(h.calls.dns).toBe(2);
    expect(await h.r.resolve('n0')).toEqual(v4('10.0.2.2'));
    expect(h.calls.dns).toBe(2); // fresh again
  });

  it('host resolver: a re-resolution while DNS times out keeps the old addresses, never calls getaddrinfo, and is tried again only after another refreshMs', async () => {
    let cut = false;
    const h = harness({ dns: () => (cut ? Promise.reject(errno('ETIMEOUT')) : Promise.resolve(v4('10.0.0.4'))) });
    await h.r.resolve('n0');
    cut = true;
    h.advance(1_500);
    for (let i = 0; i < 10; i++) expect(await h.r.resolve('n0')).toEqual(v4('10.0.0.4'));
    await settle();
    expect(h.calls).toEqual({ hosts: 2, dns: 2, lookup: 0 }); // one re-resolution in flight at a time
    expect(await h.r.resolve('n0')).toEqual(v4('10.0.0.4'));
    await settle();
    expect(h.calls.dns).toBe(2); // failed just now: not again before refreshMs
    h.advance(1_500);
    await h.r.resolve('n0');
    await settle();
    expect(h.calls).toEqual({ hosts: 3, dns: 3, lookup: 0 });
  });

  it('host resolver: as net.connect\'s lookup it answers both call shapes (all: true gives every address, for Node\'s happy-eyeballs connect) and a real connect to "localhost" goes through it', async () => {
    const both: Addr[] = [{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }];
    const h = harness({ dns: () => Promise.resolve(both), lookup: () => Promise.resolve(v4('127.0.0.1')) });
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
      expect(h.calls).toEqual({ hosts: 1, dns: 1, lookup: 1 }); // 'x' through DNS once (then memory), 'localhost' through getaddrinfo
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
