/**
 * `tessera bench oracle [--host_base 36] [--seconds 8] [--clients 2] [--concurrency 1024]`: the
 * timestamp oracle of a throwaway 1-master cluster (docs/percolator.md). `clients` TesseraClients
 * (each one connection, one GetTimestamps RPC in flight: the paper's batching), each with
 * `concurrency` askers looping getTimestamp(). Prints timestamps/s, RPCs/s, mean batch and the
 * latency of one getTimestamp() (queueing for the batch included) as p50/p99. Asserts nothing.
 */
import { TesseraClient } from '../client/tessera-client';
import { BenchCluster } from './bench-cluster';
import { checkSectionArgs, sectionArgs } from './section-args';

/** Log-scale latency histogram (5% buckets from 1 µs): bounded memory at millions of samples. */
export class LatencyHistogram {
  private readonly counts = new Map<number, number>();
  private total = 0;
  add(us: number): void {
    const b = Math.floor(Math.log(Math.max(1, us)) / Math.log(1.05));
    this.counts.set(b, (this.counts.get(b) ?? 0) + 1);
    this.total++;
  }
  /** The upper edge (µs) of the bucket holding quantile q. */
  quantileUs(q: number): number {
    let seen = 0;
    for (const b of [...this.counts.keys()].sort((x, y) => x - y)) {
      seen += this.counts.get(b)!;
      if (seen >= q * this.total) return Math.pow(1.05, b + 1);
    }
    return 0;
  }
}

export function numArg(args: string[], name: string, dflt: number): number {
  const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return dflt;
  const a = args[i]!;
  const v = Number(a.includes('=') ? a.split('=')[1] : args[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
  return v;
}

export async function runOracleSection(): Promise<void> {
  const args = sectionArgs('oracle');
  checkSectionArgs(args, ['host_base', 'seconds', 'clients', 'concurrency']);
  const hostBase = numArg(args, 'host_base', 36);
  const seconds = numArg(args, 'seconds', 8);
  const nClients = numArg(args, 'clients', 2);
  const conc = numArg(args, 'concurrency', 1024);
  const cluster = new BenchCluster();
  const clients: TesseraClient[] = [];
  try {
    process.stdout.write(`oracle bench: 1 master on 127.0.0.${hostBase}; ${nClients} client(s) x ${conc} askers, ${seconds} s\n`);
    await cluster.start(0, hostBase);
    for (let i = 0; i < nClients; i++) clients.push(await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 }));
    // Warm-up: the first reservation and the connections.
    await Promise.all(clients.map((c) => Promise.all(Array.from({ length: 100 }, () => c.oracle.getTimestamp()))));
    const hist = new LatencyHistogram();
    const rpcs0 = clients.reduce((s, c) => s + c.oracle.counters().rpcs, 0);
    let n = 0;
    let last = 0n;
    let monotonicPerAsker = true;
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    await Promise.all(
      clients.flatMap((c) =>
        Array.from({ length: conc }, async () => {
          let mine = 0n;
          while (performance.now() < end) {
            const s = performance.now();
            const ts = await c.oracle.getTimestamp();
            hist.add((performance.now() - s) * 1000);
            if (ts <= mine) monotonicPerAsker = false;
            mine = ts;
            if (ts > last) last = ts;
            n++;
          }
        }),
      ),
    );
    const secs = (performance.now() - t0) / 1000;
    const rpcs = clients.reduce((s, c) => s + c.oracle.counters().rpcs, 0) - rpcs0;
    process.stdout.write(
      `timestamps/s: ${Math.round(n / secs)}\nGetTimestamps RPCs/s: ${Math.round(rpcs / secs)} (mean batch ${(n / Math.max(1, rpcs)).toFixed(0)})\n` +
        `getTimestamp latency: p50 ${(hist.quantileUs(0.5) / 1000).toFixed(2)} ms, p99 ${(hist.quantileUs(0.99) / 1000).toFixed(2)} ms\n` +
        `each asker's timestamps strictly increasing: ${monotonicPerAsker ? 'yes' : 'NO'}\n`,
    );
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await cluster.stop();
  }
}
