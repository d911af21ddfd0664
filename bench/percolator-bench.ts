/**
 * `tessera bench percolator [--host_base 37] [--seconds 8] [--concurrency 16] [--accounts 1000]`:
 * 2-row bank transfers through Percolator transactions (client.percolator, docs/percolator.md) and
 * through YugabyteDB-style distributed transactions (client.beginTransaction), on one throwaway
 * cluster (1 master + 3 tservers, RF 3), one after the other in the same run. Prints committed
 * transfers/s, conflicts and p50/p99 of a committed transfer. Asserts nothing.
 */
import { DbError } from '../common/errors';
import { TesseraClient } from '../client/tessera-client';
import { BenchCluster } from './bench-cluster';
import { LatencyHistogram, numArg } from './oracle-bench';
import { checkSectionArgs, sectionArgs } from './section-args';

interface Figure {
  name: string;
  perSec: number;
  conflicts: number;
  p50Ms: number;
  p99Ms: number;
}

async function drive(name: string, conc: number, ms: number, accounts: number, op: (from: bigint, to: bigint) => Promise<void>): Promise<Figure> {
  const hist = new LatencyHistogram();
  let ok = 0;
  let conflicts = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(
    Array.from({ length: conc }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const from = BigInt((w * 7919 + i * 104_729) % accounts);
        const to = (from + 1n + BigInt(i % 97)) % BigInt(accounts);
        const s = performance.now();
        try {
          await op(from, to);
          ok++;
          hist.add((performance.now() - s) * 1000);
        } catch (e) {
          DbError.from(e);
          conflicts++;
        }
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { name, perSec: ok / secs, conflicts, p50Ms: hist.quantileUs(0.5) / 1000, p99Ms: hist.quantileUs(0.99) / 1000 };
}

export async function runPercolatorSection(): Promise<void> {
  const args = sectionArgs('percolator');
  checkSectionArgs(args, ['host_base', 'seconds', 'concurrency', 'accounts']);
  const hostBase = numArg(args, 'host_base', 37);
  const ms = numArg(args, 'seconds', 8) * 1000;
  const conc = numArg(args, 'concurrency', 16);
  const accounts = numArg(args, 'accounts', 1000);
  const cluster = new BenchCluster();
  let c: TesseraClient | undefined;
  try {
    process.stdout.write(`percolator bench: 1 master + 3 tservers (RF 3) on 127.0.0.${hostBase}+; ${accounts} accounts, c${conc}, ${ms / 1000} s each\n`);
    await cluster.start(3, hostBase);
    c = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    const cl = c;
    const cols = [{ name: 'id', type: 'int64' as const }, { name: 'bal', type: 'int64' as const }];
    await cl.percolator.createTable({ name: 'pbank', columns: cols, primaryKey: { hash: ['id'] }, numTablets: 3 });
    await cl.createTable({ name: 'ybank', columns: cols, primaryKey: { hash: ['id'] }, numTablets: 3 });
    const load = await cl.percolator.begin({ timeoutMs: 60_000 });
    for (let i = 0; i < accounts; i++) await load.table('pbank').upsert({ id: BigInt(i), bal: 1000n });
    await load.commit();
    await cl.table('ybank').upsertMany(Array.from({ length: accounts }, (_, i) => ({ id: BigInt(i), bal: 1000n })));
    const perc = async (from: bigint, to: bigint): Promise<void> => {
      const t = await cl.percolator.begin();
      const a = await t.table('pbank').get({ id: from });
      const b = await t.table('pbank').get({ id: to });
      await t.table('pbank').upsert({ id: from, bal: (a!['bal'] as bigint) - 1n });
      await t.table('pbank').upsert({ id: to, bal: (b!['bal'] as bigint) + 1n });
      await t.commit();
    };
    const yb = async (from: bigint, to: bigint): Promise<void> => {
      const t = await cl.beginTransaction();
      try {
        const a = await t.table('ybank').get({ id: from });
        const b = await t.table('ybank').get({ id: to });
        await t.table('ybank').upsert({ id: from, bal: (a!['bal'] as bigint) - 1n });
        await t.table('ybank').upsert({ id: to, bal: (b!['bal'] as bigint) + 1n });
        await t.commit();
      } catch (e) {
        await t.abort().catch(() => undefined);
        throw e;
      }
    };
    await drive('warm-up', 4, 2000, accounts, perc);
    await drive('warm-up', 4, 2000, accounts, yb);
    const figs = [await drive('Percolator (client.percolator)', conc, ms, accounts, perc), await drive('YugabyteDB-style (client.beginTransaction)', conc, ms, accounts, yb)];
    process.stdout.write('\n| protocol | transfers/s | failed (conflict/abort) | p50 ms | p99 ms |\n|---|---|---|---|---|\n');
    for (const f of figs) process.stdout.write(`| ${f.name} | ${Math.round(f.perSec)} | ${f.conflicts} | ${f.p50Ms.toFixed(1)} | ${f.p99Ms.toFixed(1)} |\n`);
    process.stdout.write(`locks resolved by this client: ${cl.percolator.stats.rolledForward} rolled forward, ${cl.percolator.stats.rolledBack} rolled back\n`);
  } finally {
    await c?.close().catch(() => undefined);
    await cluster.stop();
  }
}
