/**
 * Host names of RPC addresses (a Docker lab's `n0:9100`) resolved once and then kept, so a connect
 * does not call getaddrinfo each time.
 *
 * Why: Node's dns.lookup runs getaddrinfo on libuv's thread pool, the same pool that runs every
 * RocksDB call and WAL fdatasync (one thread by default, `uv_threadpool_size`). In a container cut
 * off from its network, a lookup of a peer's name waits out the resolver's time-outs (10 s measured:
 * EAI_AGAIN) and holds that thread all the while, so the cut-off server's storage stalls behind its
 * own reconnect attempts, and after the heal it still waits for the lookups queued meanwhile.
 *
 * So: the first connect to a name looks it up with dns.lookup (getaddrinfo: /etc/hosts, then DNS),
 * one lookup per name at a time. Later connects use the address found, at once. When that address is
 * older than `refreshMs`, a connect also re-resolves the name in the background with c-ares
 * (dns.Resolver: its own sockets, not the thread pool) and falls back to dns.lookup only when DNS
 * answered (the name may be in /etc/hosts only) — never when DNS timed out, which is the cut-off case.
 * A re-resolution that fails keeps the old address (a lab reconnects a container with its old IP).
 * IP literals never get here (net.connect skips the lookup for them).
 */
import * as dns from 'node:dns';
import * as net from 'node:net';

/** The `lookup` option of net.connect. */
export type NetLookup = NonNullable<net.TcpNetConnectOpts['lookup']>;

interface Address {
  address: string;
  family: 4 | 6;
}
/** Every address of a name, in the order getaddrinfo (or DNS) gave them; never empty. */
type Resolved = readonly Address[];

export interface HostResolverDeps {
  /** getaddrinfo on the thread pool (dns.lookup). */
  lookup(host: string): Promise<Resolved>;
  /** DNS only, off the thread pool (c-ares); rejects with code ETIMEOUT when no server answered. */
  resolveDns(host: string): Promise<Resolved>;
  nowMs(): number;
  /** An address is re-resolved (in the background) once it is this old. */
  refreshMs: number;
}

/** A resolution's DNS time-out (c-ares, one try): short, it only ever runs in the background or on a first contact. */
const DNS_TIMEOUT_MS = 1_000;
/** Re-resolve a name this long after its address was found (a lab re-creating a container may give it another IP). */
export const HOST_REFRESH_MS = 30_000;

function defaultDeps(): HostResolverDeps {
  const resolver = new dns.promises.Resolver({ timeout: DNS_TIMEOUT_MS, tries: 1 });
  return {
    lookup: (host) =>
      new Promise((resolve, reject) =>
        dns.lookup(host, { all: true }, (err, addresses) => {
          if (err) reject(err);
          else if (addresses.length === 0) reject(Object.assign(new Error(`no address for ${host}`), { code: dns.NODATA }));
          else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
        }),
      ),
    resolveDns: async (host) => {
      const ask = async (f: 4 | 6): Promise<Address[]> => {
        try {
          return (f === 4 ? await resolver.resolve4(host) : await resolver.resolve6(host)).map((address) => ({ address, family: f }));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === dns.TIMEOUT) throw e;
          return [];
        }
      };
      const found = [...(await ask(4)), ...(await ask(6))];
      if (found.length === 0) throw Object.assign(new Error(`DNS has no address for ${host}`), { code: dns.NOTFOUND });
      return found;
    },
    nowMs: () => performance.now(),
    refreshMs: HOST_REFRESH_MS,
  };
}

export class HostResolver {
  private readonly known = new Map<string, { addresses: Resolved; atMs: number }>();
  private readonly resolving = new Map<string, Promise<Resolved>>();
  private readonly deps: HostResolverDeps;
  /** Counters (tests, debugging): thread-pool lookups, DNS-only re-resolutions, answers from memory. */
  readonly stats = { lookups: 0, refreshes: 0, cached: 0 };

  constructor(deps: Partial<HostResolverDeps> = {}) {
    this.deps = { ...defaultDeps(), ...deps };
  }

  /**
   * For net.connect({ lookup }): answers from memory when it can. Node 20 asks for every address
   * (`all`, for its happy-eyeballs connect) and gets them all; a caller asking for one gets the first.
   */
  readonly lookup: NetLookup = (hostname, options, callback) => {
    const all = (options as dns.LookupOptions).all === true;
    const answer = (r: Resolved): void => {
      if (all) (callback as (err: null, addresses: dns.LookupAddress[]) => void)(null, r.map((a) => ({ address: a.address, family: a.family })));
      else callback(null, r[0]!.address, r[0]!.family);
    };
    this.resolve(hostname).then(answer, (err: NodeJS.ErrnoException) => callback(err, all ? ([] as unknown as string) : '', 0));
  };

  /** The address of `host`: from memory (re-resolved in the background when old), else looked up once. */
  resolve(host: string): Promise<Resolved> {
    const k = this.known.get(host);
    if (k) {
      this.stats.cached++;
      if (this.deps.nowMs() - k.atMs >= this.deps.refreshMs && !this.resolving.has(host)) void this.refresh(host);
      return Promise.resolve(k.addresses);
    }
    let p = this.resolving.get(host);
    if (!p) {
      this.stats.lookups++;
      p = this.deps.lookup(host).then(
        (r) => {
          this.known.set(host, { addresses: r, atMs: this.deps.nowMs() });
          this.resolving.delete(host);
          return r;
        },
        (e: unknown) => {
          this.resolving.delete(host);
          throw e;
        },
      );
      this.resolving.set(host, p);
    }
    return p;
  }

  /** Re-resolve a known name without holding the thread pool while DNS is unreachable; keep the old address on failure. */
  private refresh(host: string): Promise<Resolved> {
    this.stats.refreshes++;
    const p = this.deps
      .resolveDns(host)
      .catch((e: NodeJS.ErrnoException) => {
        if (e.code === dns.TIMEOUT) throw e; // DNS unreachable: getaddrinfo would wait it out on the pool
        this.stats.lookups++;
        return this.deps.lookup(host); // DNS answered without it: /etc/hosts, say
      })
      .then(
        (r) => {
          this.known.set(host, { addresses: r, atMs: this.deps.nowMs() });
          return r;
        },
        () => {
          // Keep the old addresses, and try again only after another refreshMs.
          const k = this.known.get(host)!;
          k.atMs = this.deps.nowMs();
          return k.addresses;
        },
      )
      .finally(() => this.resolving.delete(host));
    this.resolving.set(host, p);
    return p;
  }
}

/** The process's resolver (every RPC client of the process shares what it learned). */
export const hostResolver = new HostResolver();
