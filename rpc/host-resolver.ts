/**
 * Host names of RPC addresses (a Docker lab's `n0:9100`) resolved without holding libuv's thread
 * pool while DNS does not answer, and kept once found, so a connect does not resolve each time.
 *
 * Why: Node's dns.lookup runs getaddrinfo on libuv's thread pool, the same pool that runs every
 * RocksDB call and WAL fdatasync (one thread by default, `uv_threadpool_size`). In a container cut
 * off from its network, a lookup of a peer's name waits out the resolver's time-outs (10 s measured:
 * EAI_AGAIN) and holds that thread all the while, so the cut-off server's storage stalls behind its
 * own reconnect attempts, and after the heal it still waits for the lookups queued meanwhile.
 *
 * So a name is resolved as getaddrinfo would, in its order, but off the pool where it can be:
 * /etc/hosts (read here), then DNS through c-ares (dns.Resolver: its own sockets, 1 s time-out), and
 * only when DNS answered without an address (the name may come from another source of the system's,
 * such as its own host name) getaddrinfo — never while DNS times out. One resolution per name at a
 * time; the addresses found are kept and answered at once. Once they are older than `refreshMs` a
 * connect also re-resolves the name in the background, and a failed re-resolution keeps them (a lab
 * reconnects a container with its old IP). 'localhost' goes to getaddrinfo directly (never DNS). IP
 * literals never get here (net.connect skips the lookup for them).
 */
import * as dns from 'node:dns';
import * as fs from 'node:fs';
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
  /** The addresses /etc/hosts gives `host` (empty: it does not name it). */
  hostsFile(host: string): Address[];
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

const HOSTS_FILE = '/etc/hosts';

/** The addresses `text` (hosts(5): address, then names; # comments) gives `host`, in file order. */
export function hostsFileAddresses(text: string, host: string): Address[] {
  const name = host.toLowerCase();
  const out: Address[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') continue;
    const [address, ...names] = line.split(/\s+/);
    const family = net.isIP(address ?? '');
    if (family === 0 || !names.some((n) => n.toLowerCase() === name)) continue;
    out.push({ address: address!, family: family === 6 ? 6 : 4 });
  }
  return out;
}

function defaultDeps(): HostResolverDeps {
  const resolver = new dns.promises.Resolver({ timeout: DNS_TIMEOUT_MS, tries: 1 });
  return {
    hostsFile: (host) => {
      try {
        return hostsFileAddresses(fs.readFileSync(HOSTS_FILE, 'utf8'), host);
      } catch {
        return [];
      }
    },
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

  /** The addresses of `host`: from memory (re-resolved in the background when old), else resolved once (resolveAfresh). */
  resolve(host: string): Promise<Resolved> {
    const k = this.known.get(host);
    if (!k) return this.resolving.get(host) ?? this.resolveOnce(host);
    if (this.deps.nowMs() - k.atMs >= this.deps.refreshMs && !this.resolving.has(host)) void this.resolveOnce(host);
    return Promise.resolve(k.addresses);
  }

  /**
   * One resolution of `host` at a time (resolveAfresh); what it finds is kept. A failed one rejects
   * when nothing was known, and otherwise (a refresh) keeps the old addresses and tries again only
   * after another refreshMs.
   */
  private resolveOnce(host: string): Promise<Resolved> {
    const p = this.resolveAfresh(host)
      .then(
        (r) => {
          this.known.set(host, { addresses: r, atMs: this.deps.nowMs() });
          return r;
        },
        (e: unknown) => {
          const k = this.known.get(host);
          if (!k) throw e;
          k.atMs = this.deps.nowMs();
          return k.addresses;
        },
      )
      .finally(() => this.resolving.delete(host));
    this.resolving.set(host, p);
    return p;
  }

  /**
   * getaddrinfo's answer without its wait on the pool when DNS is unreachable: /etc/hosts, then DNS
   * (c-ares), then getaddrinfo only if DNS answered (other sources of the system's); a DNS time-out
   * fails (EAI_AGAIN, as getaddrinfo would after 10 s).
   */
  private async resolveAfresh(host: string): Promise<Resolved> {
    if (host === 'localhost' || host.endsWith('.localhost')) return this.deps.lookup(host);
    const listed = this.deps.hostsFile(host);
    if (listed.length > 0) return listed;
    try {
      return await this.deps.resolveDns(host);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== dns.TIMEOUT) return this.deps.lookup(host);
      throw Object.assign(new Error(`cannot resolve ${host}: DNS did not answer within ${DNS_TIMEOUT_MS} ms, and ${HOSTS_FILE} does not name it`), { code: 'EAI_AGAIN', hostname: host });
    }
  }
}

/** The process's resolver (every RPC client of the process shares what it learned). */
export const hostResolver = new HostResolver();
