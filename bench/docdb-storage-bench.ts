/**
 * DocDB storage figures (issue 4, "Tests and figures"), RocksDB engine in a temp directory:
 * RegularDB batched writes per second, point reads per second, scan rows per second, and apply rows
 * per second for one 100,000-row transaction. Then the path a tablet replica takes for many small
 * transactions (issue 8): one-row transactions in groups of SMALL_GROUP (about what one Raft apply
 * call carries at c64), their intents written together (writeIntentsMany), then applied together in
 * the RegularDB batch of their APPLY entries (writeRegularMany with apply marks, clean-ups deferred),
 * against the same rows written as plain RegularDB writes in the same groups (3 rounds, each side's
 * quickest kept): process CPU µs per row,
 * the RocksDB thread pool's (memtable inserts, flushes, compactions) included. Called from bench/docdb-bench.ts; also runs alone:
 * `node dist/bench/docdb-storage-bench.js [--rows=N] [--txn_packed_intents=false] [--txn_lone_intent_meta=false]`
 * (the flags: the per-cell intent format instead of packed rows; a reverse-index entry for every
 * write batch instead of head intents; for A/Bs, docs/transactions.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Flags } from '../common/flags';
import { TxnId } from '../common/ids';
import { DocDb, RocksDbEngine, type DocKey, type RowOp } from '../docdb';

const WRITE_BATCH_ROWS = 1000;
const INTENT_BATCH_ROWS = 5000;
const POINT_READS = 20_000;
const SCAN_PAGE_ROWS = 10_000;
/** One-row transactions per group in the small-transaction case. */
const SMALL_GROUP = 8;
const SMALL_ROWS_MAX = 50_000;
/** Groups between a group's intents and its applies. */
const SMALL_LAG = 4;
/** Rounds of the small-transaction comparison (the quickest of each side is kept). */
const SMALL_ROUNDS = 3;

const rowKey = (i: number): DocKey => ({ hash: (i * 40503) & 0xffff, hashed: [BigInt(i)], range: [] });
const upsert = (i: number): RowOp => ({ type: 'upsert', key: rowKey(i), columns: [{ columnId: 1, value: `value-${i}` }, { columnId: 2, value: BigInt(i) }] });
const noStatus = () => Promise.resolve({ status: 'PENDING' as const });

/** Flag values the bench's databases open with (--txn_packed_intents=false, --txn_lone_intent_meta=false for A/Bs). */
const benchFlags = new Flags();

async function openDb(dir: string): Promise<DocDb> {
  return DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')), flags: benchFlags });
}

function rate(n: number, ms: number): string {
  return `${Math.round((n * 1000) / ms).toLocaleString('en-US')}/s`;
}

export interface StorageFigures {
  writeRowsPerSec: number;
  pointReadsPerSec: number;
  scanRowsPerSec: number;
  applyRowsPerSec: number;
  /** Small transactions: process CPU µs per row (plain write, intents write, apply). */
  small: { rows: number; plainCpuUsPerRow: number; txnCpuUsPerRow: number };
}

function cpuUs(since: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(since);
  return c.user + c.system;
}

/**
 * One round of the small-transaction comparison on fresh databases under `dir`: `n` rows as plain
 * RegularDB writes in groups of SMALL_GROUP, then as one-row transactions (their intents in groups,
 * each group applied in the RegularDB batch of its APPLY entries SMALL_LAG groups later, clean-ups
 * deferred). Process CPU of each side and the RocksDB operations each wrote.
 */
async function smallRound(dir: string, n: number, base: bigint, index0: number) {
  let index = index0;
  const db3 = await openDb(path.join(dir, 'plain'));
  const db4 = await openDb(path.join(dir, 'txn'));
  try {
    let c0 = process.cpuUsage();
    for (let i = 0; i < n; i += SMALL_GROUP) {
      const batches = [];
      for (let k = i; k < i + SMALL_GROUP; k++) batches.push({ ops: [upsert(k)], ht: base + BigInt(index), opId: { term: 1, index: index++ } });
      await db3.writeRegularMany(batches);
    }
    const plainUs = cpuUs(c0);
    const txnOf = (k: number) => ({ txnId: TxnId(`small-${k}`), statusTablet: 's', isolation: 'snapshot' as const, priority: 1, startHt: base });
    const applyGroup = async (g: number): Promise<void> => {
      const marks = [];
      for (let k = g; k < g + SMALL_GROUP; k++) marks.push({ txnId: txnOf(k).txnId, commitHt: base + 20_000_000n + BigInt(index), opId: { term: 1, index: index++ } });
      const how = await db4.writeRegularMany([], marks, true);
      if (how.some((m) => m !== 'applied')) throw new Error(`bench: a small transaction was not applied in its batch (${how.join(',')})`);
      // The tablet writes the deferred clean-ups once they are apply_cleanup_delay_ms old.
      if (db4.deferredAgeMs() >= 200) await db4.flushDeferred();
    };
    // As on a replica under load: a group's APPLY entries come SMALL_LAG groups after its intents.
    c0 = process.cpuUsage();
    for (let i = 0; i < n; i += SMALL_GROUP) {
      const items = [];
      for (let k = i; k < i + SMALL_GROUP; k++) items.push({ txn: txnOf(k), ops: [upsert(k)], ht: base + BigInt(index), opId: { term: 1, index: index++ } });
      await db4.writeIntentsMany(items);
      if (i >= SMALL_LAG * SMALL_GROUP) await applyGroup(i - SMALL_LAG * SMALL_GROUP);
    }
    for (let i = Math.max(0, n - SMALL_LAG * SMALL_GROUP); i < n; i += SMALL_GROUP) await applyGroup(i);
    await db4.flushDeferred();
    const txnUs = cpuUs(c0);
    const left = (await db4.sizes()).intentsdb.intentCount;
    if (left !== 0) throw new Error(`bench: ${left} intents left after the small transactions' applies`);
    return { index, plainUs, txnUs, plainCounts: db3.writeCounts(), txnCounts: db4.writeCounts() };
  } finally {
    await db3.close();
    await db4.close();
  }
}

// Long by design (docs/conventions.md): a benchmark's run in the order its report prints, phase after phase.
export async function runStorageBench(rows = 100_000, print: (s: string) => void = console.log): Promise<StorageFigures> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-docdb-bench-'));
  try {
    const db = await openDb(path.join(root, 'a'));
    let index = 1;
    const base = 1_000_000n << 12n;

    let t0 = performance.now();
    for (let i = 0; i < rows; i += WRITE_BATCH_ROWS) {
      const ops: RowOp[] = [];
      for (let k = i; k < Math.min(rows, i + WRITE_BATCH_ROWS); k++) ops.push(upsert(k));
      await db.writeRegular(ops, base + BigInt(index), { term: 1, index: index++ });
    }
    const writeMs = performance.now() - t0;
    print(`regulardb batched writes: ${rows} rows (2 columns + liveness, ${WRITE_BATCH_ROWS} rows/batch) in ${writeMs.toFixed(0)} ms = ${rate(rows, writeMs)}`);

    const readHt = base + 1_000_000n;
    t0 = performance.now();
    let x = 12345;
    for (let i = 0; i < POINT_READS; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      const r = await db.getRow(rowKey(x % rows), { readHt, resolveStatus: noStatus });
      if (!r) throw new Error('bench: row missing');
    }
    const readMs = performance.now() - t0;
    print(`regulardb point reads: ${POINT_READS} random getRow in ${readMs.toFixed(0)} ms = ${rate(POINT_READS, readMs)}`);

    // Three passes, the quickest kept: a scan is short, and a busy machine's other work lands in one.
    let scanMs = Infinity;
    let scanCpuUs = Infinity;
    let scanned = 0;
    for (let pass = 0; pass < 3; pass++) {
      t0 = performance.now();
      const cpu0 = process.cpuUsage();
      scanned = 0;
      let resume: Uint8Array | undefined;
      for (let page = 0; page <= rows / SCAN_PAGE_ROWS + 1; page++) {
        const r = await db.scan({ readHt, resolveStatus: noStatus, limit: SCAN_PAGE_ROWS, ...(resume ? { startKey: resume } : {}) });
        scanned += r.rows.length;
        resume = r.resumeKey;
        if (!resume) break;
      }
      if (scanned !== rows) throw new Error(`bench: scanned ${scanned} of ${rows}`);
      scanCpuUs = Math.min(scanCpuUs, cpuUs(cpu0));
      scanMs = Math.min(scanMs, performance.now() - t0);
    }
    print(`regulardb scan: ${scanned} rows in pages of ${SCAN_PAGE_ROWS} in ${scanMs.toFixed(0)} ms = ${rate(scanned, scanMs)}; process CPU ${(scanCpuUs / scanned).toFixed(2)} µs per row (quickest of 3 passes)`);
    await db.close();

    // Apply: a fresh tablet, one transaction of `rows` rows.
    const db2 = await openDb(path.join(root, 'b'));
    const txn = { txnId: TxnId('bench-txn'), statusTablet: 's', isolation: 'snapshot' as const, priority: 1, startHt: base };
    index = 1;
    t0 = performance.now();
    for (let i = 0; i < rows; i += INTENT_BATCH_ROWS) {
      const ops: RowOp[] = [];
      for (let k = i; k < Math.min(rows, i + INTENT_BATCH_ROWS); k++) ops.push(upsert(k));
      await db2.writeIntents(txn, ops, base + BigInt(index), { term: 1, index: index++ });
    }
    const intentMs = performance.now() - t0;
    const sizes = await db2.sizes();
    print(`intentsdb writes: ${rows} rows as intents in ${intentMs.toFixed(0)} ms = ${rate(rows, intentMs)} (intentCount ${sizes.intentsdb.intentCount}, memtable ${(sizes.intentsdb.memtableBytes / 1048576).toFixed(1)} MiB)`);
    t0 = performance.now();
    const p = await db2.applyIntents(txn.txnId, base + 10_000_000n, { term: 1, index: index++ });
    const applyMs = performance.now() - t0;
    if (!p.done) throw new Error('bench: apply not done');
    const after = await db2.sizes();
    print(`apply: ${rows}-row transaction (${p.recordsApplied} intent records, default chunks) in ${applyMs.toFixed(0)} ms = ${rate(rows, applyMs)} (intents left ${after.intentsdb.intentCount})`);
    await db2.close();

    // Small transactions, as a tablet replica sees them under load: SMALL_ROUNDS rounds, plain then
    // transactional, each on fresh databases; the quickest round of each side is kept (a busy
    // machine's other work lands in one round, not in every one).
    const n = Math.min(rows, SMALL_ROWS_MAX) - (Math.min(rows, SMALL_ROWS_MAX) % SMALL_GROUP);
    let plainUs = Infinity;
    let txnUs = Infinity;
    let counts: { plain: ReturnType<DocDb['writeCounts']>; txn: ReturnType<DocDb['writeCounts']> } | undefined;
    for (let round = 0; round < SMALL_ROUNDS; round++) {
      const r = await smallRound(path.join(root, `small-${round}`), n, base, index);
      index = r.index;
      plainUs = Math.min(plainUs, r.plainUs);
      txnUs = Math.min(txnUs, r.txnUs);
      counts = { plain: r.plainCounts, txn: r.txnCounts };
    }
    const small = { rows: n, plainCpuUsPerRow: plainUs / n, txnCpuUsPerRow: txnUs / n };
    // RocksDB operations per row (deterministic, unlike the CPU figures on a shared machine).
    const perRow = (c: { puts: number; dels: number; delRanges: number }): string => `${(c.puts / n).toFixed(2)} puts, ${(c.dels / n).toFixed(2)} deletes${c.delRanges > 0 ? `, ${(c.delRanges / n).toFixed(2)} range deletes` : ''}`;
    const wp = counts!.plain;
    const wt = counts!.txn;
    const opsOf = (c: { puts: number; dels: number; delRanges: number }): number => c.puts + c.dels + c.delRanges;
    print(
      `small transactions, RocksDB operations per row: plain RegularDB ${perRow(wp.regulardb)}; transactional IntentsDB ${perRow(wt.intentsdb)}, RegularDB ${perRow(wt.regulardb)}; all ${((opsOf(wt.intentsdb) + opsOf(wt.regulardb)) / n).toFixed(2)} vs ${(opsOf(wp.regulardb) / n).toFixed(2)}`,
    );
    print(`small transactions (${n} one-row txns, ${SMALL_GROUP} per group, applied ${SMALL_LAG} groups later), process CPU per row, quickest of ${SMALL_ROUNDS} rounds each: plain RegularDB write ${small.plainCpuUsPerRow.toFixed(1)} µs; intents write + apply (in the APPLY batch, clean-ups deferred) ${small.txnCpuUsPerRow.toFixed(1)} µs = ${(small.txnCpuUsPerRow / small.plainCpuUsPerRow).toFixed(2)}× the plain write`);
    return {
      writeRowsPerSec: (rows * 1000) / writeMs,
      pointReadsPerSec: (POINT_READS * 1000) / readMs,
      scanRowsPerSec: (scanned * 1000) / scanMs,
      applyRowsPerSec: (rows * 1000) / applyMs,
      small,
    };
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const arg = process.argv.find((a) => a.startsWith('--rows='));
  // DocDB flags for A/B runs: --txn_packed_intents=false, --txn_lone_intent_meta=false.
  for (const name of ['txn_packed_intents', 'txn_lone_intent_meta']) {
    const a = process.argv.find((x) => x.startsWith(`--${name}=`));
    if (a !== undefined) benchFlags.setFromString(name, a.slice(name.length + 3));
  }
  runStorageBench(arg ? Number(arg.slice(7)) : 100_000).catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
