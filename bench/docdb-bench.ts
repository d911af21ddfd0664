/**
 * `npm run bench:docdb`: DocDB figures (issue 4), one section per concern:
 *
 *   encoding   encoded keys per second (pure CPU)            bench/docdb-encoding-bench.ts
 *   storage    RegularDB writes, point reads, scans, apply    bench/docdb-storage-bench.ts
 *   cells      versioned gets (1, 3 versions, raw)           bench/docdb-cells-bench.ts
 *   filters    scan filters: prefix seeks, filter overhead    bench/docdb-filters-bench.ts
 *
 * Options: --only=encoding,storage (default: all sections), --keys=N (encoding loop size),
 * --rows=N (storage row count, default 100,000; filters row count, default 1,000,000). To add a section: write `run…Bench(…, print)` in its own file and
 * add one entry to SECTIONS.
 */
import { runEncodingBench } from './docdb-encoding-bench';
import { runStorageBench } from './docdb-storage-bench';
import { runCellsBench } from './docdb-cells-bench';
import { runFiltersBench } from './docdb-filters-bench';

interface Section {
  name: string;
  run: (print: (s: string) => void) => Promise<unknown> | unknown;
}

function argValue(name: string): string | undefined {
  const a = process.argv.find((s) => s.startsWith(`--${name}=`));
  return a === undefined ? undefined : a.slice(name.length + 3);
}

function argNumber(name: string, dflt: number): number {
  const v = Number(argValue(name));
  return Number.isFinite(v) && v > 0 ? v : dflt;
}

const SECTIONS: Section[] = [
  { name: 'encoding', run: (print) => runEncodingBench(argNumber('keys', 300_000), print) },
  { name: 'storage', run: (print) => runStorageBench(argNumber('rows', 100_000), print) },
  { name: 'cells', run: (print) => runCellsBench(argNumber('cell_rows', 20_000), print) },
  { name: 'filters', run: (print) => runFiltersBench(argNumber('rows', 1_000_000), print) },
];

async function main(): Promise<void> {
  const only = argValue('only')?.split(',').filter((s) => s.length > 0);
  const unknown = only?.filter((n) => !SECTIONS.some((s) => s.name === n)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(', ')}; have ${SECTIONS.map((s) => s.name).join(', ')}`);
  for (const s of SECTIONS) {
    if (only !== undefined && !only.includes(s.name)) continue;
    console.log(`\n== docdb bench: ${s.name} ==`);
    await s.run((line) => console.log(line));
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
