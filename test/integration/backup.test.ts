/**
 * Export and import (client/backup/, docs/backup.md) on real processes: an export taken while a bank
 * workload moves money restores to tables whose total is intact (the cut is one snapshot across
 * tablets); every value type survives; a damaged part, a missing manifest and an existing target are
 * refused with what is wrong, and nothing half-imported is left visible. Nodes on 127.0.0.58-60.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportTables, importTables, tableDigest } from '../../client/backup/export-import';
import { TesseraClient } from '../../client/tessera-client';
import { ErrorCode } from '../../common/errors';
import { restoreTable } from '../../client/backup/restore-table';
import { encodeRow, readManifest, RowDigest } from '../../client/backup/backup-format';
import { tabletServerMethods } from '../../rpc';
import { ProcCluster, runCliOn } from './cluster-harness';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-backup-it-'));
const ARCHIVE = path.join(DIR, 'wal-archive');
const ACCOUNTS = 8;
let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

beforeAll(async () => {
  // The WAL archive keeps the segments of walsrc; 1 MiB segments so a test can make one roll.
  cluster = await ProcCluster.create({ hostBase: 58, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200', `--log_archive_dir=${ARCHIVE}`, '--log_archive_tables=walsrc', '--log_segment_size_mb=1'] });
  await cluster.startAll();
  client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
  fs.rmSync(DIR, { recursive: true, force: true });
});

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return runCliOn(cluster!, args, 90_000);
}

describe('export and import', () => {
  it('backup: an export under a bank workload restores with the total intact; every value type survives; the digests match', async () => {
    const c = client!;
    await c.createTable({ name: 'acct', columns: [{ name: 'id', type: 'int64' }, { name: 'bal', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await c.table('acct').upsertMany(Array.from({ length: ACCOUNTS }, (_, i) => ({ id: BigInt(i), bal: 100n })));
    await c.createTable({ name: 'kinds', columns: [{ name: 'k', type: 'string' }, { name: 'n', type: 'int64' }, { name: 'd', type: 'double' }, { name: 'b', type: 'bytes' }, { name: 'f', type: 'bool' }, { name: 's', type: 'string' }], primaryKey: { hash: ['k'] }, numTablets: 2 });
    const kinds = [
      { k: 'a', n: -(2n ** 63n), d: Number.NaN, b: new Uint8Array([0, 255, 10]), f: true, s: 'line\nbreak "quoted" ünïcode' },
      { k: 'b', n: 2n ** 63n - 1n, d: Number.NEGATIVE_INFINITY, b: new Uint8Array([]), f: false, s: '' },
      { k: 'c', n: 0n, d: 1.5e-300, b: null, f: null, s: null },
    ];
    await c.table('kinds').upsertMany(kinds);

    // Transfers run until the export is done (bounded), so the export cuts through them.
    let stop = false;
    let transfers = 0;
    const load = (async () => {
      for (let i = 0; i < 5_000 && !stop; i++) {
        const from = i % ACCOUNTS;
        const to = (from + 3) % ACCOUNTS;
        const txn = await c.beginTransaction();
        try {
          const t = txn.table('acct');
          const [a, b] = await Promise.all([t.get({ id: BigInt(from) }), t.get({ id: BigInt(to) })]);
          await Promise.all([t.upsert({ id: BigInt(from), bal: (a!['bal'] as bigint) - 1n }), t.upsert({ id: BigInt(to), bal: (b!['bal'] as bigint) + 1n })]);
          await txn.commit();
          transfers++;
        } catch {
          await txn.abort().catch(() => undefined);
        }
      }
    })();
    const exportDir = path.join(DIR, 'full');
    for (let i = 0; i < 3_000 && transfers < 5; i++) await new Promise((r) => setTimeout(r, 20));
    const before = transfers;
    expect(before, 'transfers committed before the export began').toBeGreaterThanOrEqual(5);
    const ex = await cli(['admin', 'export', '--tables', 'acct,kinds', '--to', exportDir]);
    const during = transfers - before;
    stop = true;
    await load;
    process.stdout.write(`backup: ${during} transfers committed while the export ran\n`);
    expect(ex.code, ex.out).toBe(0);
    expect(ex.out).toMatch(/exported acct \(8 rows\), kinds \(3 rows\) at hybrid time \d+/);
    const m = readManifest(exportDir);
    expect(m.tables.map((t) => [t.name, t.rows])).toEqual([['acct', 8], ['kinds', 3]]);

    const r = await importTables(c, { from: exportDir, tables: ['acct'], into: 'acct_restored' });
    expect(r).toEqual([{ table: 'acct_restored', rows: 8, asOfHt: m.cutHt, verified: true }]);
    const restored = await c.table('acct_restored').scan();
    expect(restored.length).toBe(ACCOUNTS);
    expect(restored.reduce((s, x) => s + (x['bal'] as bigint), 0n)).toBe(BigInt(ACCOUNTS * 100));
    expect((await tableDigest(c, 'acct_restored')).digest).toBe(m.tables[0]!.digest);

    // --as_of: the cut of the export, taken again afterwards from the past, holds the same rows.
    const asOf = await cli(['admin', 'export', '--tables', 'acct', '--to', path.join(DIR, 'as-of'), '--as_of', m.cutHt]);
    expect(asOf.code, asOf.out).toBe(0);
    expect(readManifest(path.join(DIR, 'as-of')).tables[0]!.digest).toBe(m.tables[0]!.digest);
    // A full export's parts are per tablet, in partition order, each file named after its tablet.
    const acctParts = m.tables.find((t) => t.name === 'acct')!.parts;
    expect(acctParts.map((p) => p.tablet)).toEqual([0, 1, 2]);
    for (const p of acctParts) expect(p.file).toMatch(new RegExp(`^acct/part-t0000${p.tablet}-\\d{5}\\.ndjson$`));
    const future = await cli(['admin', 'export', '--tables', 'acct', '--to', path.join(DIR, 'future'), '--as_of', '2999-01-01T00:00:00Z']);
    expect(future.out).toMatch(/INVALID_ARGUMENT.*in the future/);
    const imp = await cli(['admin', 'import', '--from', exportDir, '--tables', 'kinds', '--into', 'kinds2']);
    expect(imp.code, imp.out).toBe(0);
    const got = new Map((await c.table('kinds2').scan()).map((x) => [x['k'], x]));
    for (const k of kinds) {
      const g = got.get(k.k)!;
      expect(g['n']).toBe(k.n);
      expect(Object.is(g['d'], k.d)).toBe(true);
      expect(g['b'] === null ? null : Buffer.from(g['b'] as Uint8Array).toString('hex')).toBe(k.b === null ? null : Buffer.from(k.b).toString('hex'));
      expect(g['f']).toBe(k.f);
      expect(g['s']).toBe(k.s);
    }
  }, 180_000);

  it('backup: a damaged part, a missing manifest and an existing target are refused, and nothing half-imported is left', async () => {
    const c = client!;
    const dir = path.join(DIR, 'full');
    const bad = path.join(DIR, 'damaged');
    fs.cpSync(dir, bad, { recursive: true });
    const part = path.join(bad, readManifest(bad).tables[0]!.parts[0]!.file);
    const bytes = fs.readFileSync(part);
    bytes[5] = bytes[5]! ^ 0x01;
    fs.writeFileSync(part, bytes);
    await expect(importTables(c, { from: bad, tables: ['acct'], into: 'acct_bad' })).rejects.toMatchObject({ code: ErrorCode.CORRUPTION, message: expect.stringMatching(/part acct\/part-t00000-00000\.ndjson is damaged/) });
    fs.rmSync(path.join(bad, 'manifest.json'));
    await expect(importTables(c, { from: bad })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND, message: expect.stringMatching(/did not finish/) });
    await expect(importTables(c, { from: dir, tables: ['acct'] })).rejects.toMatchObject({ code: ErrorCode.ALREADY_EXISTS });
    const names = (await c.listTables()).map((t) => t.name);
    expect(names).not.toContain('acct_bad');
    expect(names.filter((n) => n.includes('__importing_'))).toEqual([]);
    const again = await cli(['admin', 'export', '--tables', 'acct', '--to', dir]);
    expect(again.code).not.toBe(0);
    expect(again.out).toMatch(/ALREADY_EXISTS.*not empty/);
  }, 120_000);

  it('backup: full + two increments (overwrites, deletes, re-inserts, nulls between) restore exactly the source at the last cut, and at the middle cut; a gap or an overlap is refused', async () => {
    const c = client!;
    await c.createTable({ name: 'inc', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }, { name: 'n', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 2 });
    const t = c.table('inc');
    await t.upsertMany(Array.from({ length: 20 }, (_, i) => ({ id: BigInt(i), v: `v${i}`, n: BigInt(i) })));
    const full = path.join(DIR, 'inc-full');
    const fm = await exportTables(c, { tables: ['inc'], to: full });
    // Window 1: overwrites, deletes, new rows, a column set to null.
    await t.upsertMany(Array.from({ length: 5 }, (_, i) => ({ id: BigInt(i), v: `w${i}`, n: 100n + BigInt(i) })));
    await t.deleteMany([{ id: 5n }, { id: 6n }, { id: 7n }]);
    await t.upsertMany(Array.from({ length: 5 }, (_, i) => ({ id: BigInt(20 + i), v: `new${i}`, n: null })));
    await t.upsert({ id: 8n, v: null });
    const inc1 = path.join(DIR, 'inc-1');
    const e1 = await cli(['admin', 'export', '--tables', 'inc', '--to', inc1, '--since', full]);
    expect(e1.code, e1.out).toBe(0);
    expect(e1.out).toMatch(/exported inc \(22 rows, 14 changed\) at hybrid time \d+.*changes since \d+/);
    const m1 = readManifest(inc1);
    expect([m1.kind, m1.sinceHt]).toEqual(['incremental', fm.cutHt]);
    // Window 2: a row overwritten twice, a new row deleted, a deleted row back, a row deleted then written again.
    await t.upsert({ id: 0n, v: 'x0', n: 1n });
    await t.upsert({ id: 0n, v: 'y0', n: 2n });
    await t.delete({ id: 20n });
    await t.upsert({ id: 5n, v: 'back', n: 5n });
    await t.delete({ id: 9n });
    await t.delete({ id: 10n });
    await t.upsert({ id: 10n, n: 10n });
    const inc2 = path.join(DIR, 'inc-2');
    const m2 = await exportTables(c, { tables: ['inc'], to: inc2, sinceHt: BigInt(m1.cutHt) });
    const source = await tableDigest(c, 'inc');
    expect([m2.tables[0]!.rows, m2.tables[0]!.digest]).toEqual([source.rows, source.digest]);

    const imp = await cli(['admin', 'import', '--from', full, '--from', inc1, '--from', inc2, '--into', 'inc_restored']);
    expect(imp.code, imp.out).toBe(0);
    expect(imp.out).toMatch(/imported inc_restored \(21 rows\) as of \d+, digests checked/);
    expect(await tableDigest(c, 'inc_restored')).toEqual(source);
    expect(await c.table('inc_restored').get({ id: 10n })).toEqual({ id: 10n, v: null, n: 10n });

    const mid = await importTables(c, { from: [full, inc1, inc2], asOfHt: BigInt(m1.cutHt), into: 'inc_mid' });
    expect(mid).toEqual([{ table: 'inc_mid', rows: 22, asOfHt: m1.cutHt, verified: true }]);
    expect((await tableDigest(c, 'inc_mid')).digest).toBe(m1.tables[0]!.digest);

    const gap = await cli(['admin', 'import', '--from', full, '--from', inc2, '--into', 'inc_gap']);
    expect(gap.code).not.toBe(0);
    expect(gap.out).toMatch(/INVALID_ARGUMENT.*a gap in the chain/);
    const overlapDir = path.join(DIR, 'inc-overlap');
    await exportTables(c, { tables: ['inc'], to: overlapDir, sinceHt: BigInt(fm.cutHt) });
    await expect(importTables(c, { from: [full, inc1, overlapDir], into: 'inc_over' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, details: expect.objectContaining({ part: 'CHAIN_OVERLAP' }) });
    expect((await c.listTables()).map((x) => x.name).filter((n) => n.startsWith('inc_gap') || n.startsWith('inc_over') || n.includes('__importing_'))).toEqual([]);
  }, 180_000);

  it('backup: an interrupted export resumes at the same cut: finished tables that check are kept, a damaged one and the rest are redone', async () => {
    const c = client!;
    const dir = path.join(DIR, 'resumed');
    const ac = new AbortController();
    const lines: string[] = [];
    const progress = (l: string): void => {
      lines.push(l);
      if (/^export kinds: .* part\(s\)/.test(l)) ac.abort();
    };
    await expect(exportTables(c, { tables: ['acct', 'kinds', 'inc'], to: dir, signal: ac.signal, progress })).rejects.toMatchObject({ code: ErrorCode.SHUTTING_DOWN, message: expect.stringMatching(/--resume/) });
    expect(fs.existsSync(path.join(dir, 'manifest.json'))).toBe(false);
    const firstPart = (table: string): string => path.join(dir, table, fs.readdirSync(path.join(dir, table)).sort()[0]!);
    const acctPart = firstPart('acct');
    const acctStat = fs.statSync(acctPart);
    const kindsPart = firstPart('kinds');
    const bytes = fs.readFileSync(kindsPart);
    bytes[3] = bytes[3]! ^ 0x01;
    fs.writeFileSync(kindsPart, bytes);
    await c.table('inc').upsert({ id: 99n, v: 'after the cut', n: 0n });
    const res = await cli(['admin', 'export', '--to', dir, '--resume']);
    expect(res.code, res.out).toBe(0);
    expect(res.out).toMatch(/kinds is redone .*damaged/);
    expect(res.out).toMatch(/kept acct\n/);
    expect(fs.statSync(acctPart).mtimeMs).toBe(acctStat.mtimeMs);
    const m = readManifest(dir);
    // The same cut taken afresh holds exactly the same tables (the row written after the cut is not in).
    const fresh = await exportTables(c, { tables: ['acct', 'kinds', 'inc'], to: path.join(DIR, 'resumed-check'), asOfHt: BigInt(m.cutHt) });
    expect(m.tables.map((x) => [x.name, x.rows, x.digest])).toEqual(fresh.tables.map((x) => [x.name, x.rows, x.digest]));
    expect(fs.existsSync(path.join(dir, 'export-state.json'))).toBe(false);
    const again = await cli(['admin', 'export', '--to', dir, '--resume']);
    expect(again.out).toMatch(/ALREADY_EXISTS.*nothing to resume/);
  }, 120_000);

  it('backup: replay-wal of the WAL archive after a restore of the last export reaches the source\'s last write (plain and transactional writes, deletes)', async () => {
    const c = client!;
    await c.createTable({ name: 'walsrc', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }, { name: 'b', type: 'bytes' }], primaryKey: { hash: ['id'] }, numTablets: 1 });
    const t = c.table('walsrc');
    await t.upsertMany(Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i), v: `v${i}` })));
    const full = path.join(DIR, 'wal-full');
    const fm = await exportTables(c, { tables: ['walsrc'], to: full });
    // After the export: a transaction, overwrites, deletes, then a large row, the last write, and the
    // large row again with the same value (the table unchanged), which rolls the segment holding the last write.
    const txn = await c.beginTransaction();
    await txn.table('walsrc').upsert({ id: 100n, v: 'txn-a' });
    await txn.table('walsrc').upsert({ id: 1n, v: 'txn-b' });
    await txn.commit();
    await t.upsertMany(Array.from({ length: 10 }, (_, i) => ({ id: BigInt(10 + i), v: `w${i}` })));
    await t.deleteMany([{ id: 2n }, { id: 3n }]);
    await t.update({ id: 4n, v: null });
    const big = new Uint8Array(600 * 1024).fill(7);
    await t.upsert({ id: 500n, v: 'big', b: big });
    await t.upsert({ id: 1000n, v: 'the last write' });
    await t.upsert({ id: 500n, v: 'big', b: big });
    const source = await tableDigest(c, 'walsrc');

    await importTables(c, { from: full, into: 'walsrc_restored' });
    const rep = await cli(['admin', 'replay-wal', '--from', ARCHIVE, '--table', 'walsrc', '--into', 'walsrc_restored', '--since', fm.cutHt]);
    expect(rep.code, rep.out).toBe(0);
    process.stdout.write(`backup: ${rep.out.trim().split('\n').pop()}\n`);
    expect(rep.out).toMatch(/replayed \d+ writes of walsrc into walsrc_restored .* [1-9]\d* transactional writes/);
    expect(await c.table('walsrc_restored').get({ id: 1000n })).toMatchObject({ v: 'the last write' });
    expect(await tableDigest(c, 'walsrc_restored')).toEqual(source);
    const missing = await cli(['admin', 'replay-wal', '--from', ARCHIVE, '--table', 'nope', '--into', 'walsrc_restored']);
    expect(missing.out).toMatch(/NOT_FOUND.*no WAL archive of table nope/);
  }, 120_000);

  // Last in the file: it shortens history retention on every tserver (and sets it back).
  it('backup: restore_table brings back the table as of a past time into a new table; a time older than the retained history is refused with SNAPSHOT_TOO_OLD', async () => {
    const c = client!;
    await c.createTable({ name: 'pitr', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 2 });
    const t = c.table('pitr');
    await t.upsertMany(Array.from({ length: 30 }, (_, i) => ({ id: BigInt(i), v: `v${i}` })));
    const probe = await c.beginTransaction();
    const at = probe.readHt;
    await probe.abort();
    const before = new RowDigest();
    for await (const row of t.scanRows({ readHt: at })) before.add(encodeRow(row));
    await t.deleteMany([{ id: 1n }, { id: 2n }, { id: 3n }]);
    await t.upsertMany([{ id: 4n, v: 'changed' }, { id: 40n, v: 'new' }]);

    const r = await cli(['admin', 'restore_table', 'pitr', '--as_of', at.toString(), '--into', 'pitr_then']);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/restored pitr as of \d+ into pitr_then \(30 rows, digest checked\)/);
    expect(await tableDigest(c, 'pitr_then')).toEqual({ rows: 30, digest: before.hex() });
    expect(await c.table('pitr_then').get({ id: 4n })).toEqual({ id: 4n, v: 'v4' });
    expect((await tableDigest(c, 'pitr')).rows).toBe(28);
    await expect(restoreTable(c, { table: 'pitr', asOfHt: at, into: 'pitr_then' })).rejects.toMatchObject({ code: ErrorCode.ALREADY_EXISTS });
    const future = await cli(['admin', 'restore_table', 'pitr', '--as_of', '2999-01-01T00:00:00Z']);
    expect(future.out).toMatch(/INVALID_ARGUMENT.*in the future/);

    const setAll = async (flag: string, value: string): Promise<void> => {
      for (const ts of cluster!.tservers) await c.rpcClient().call(ts.rpcAddress, tabletServerMethods().setFlag, { name: flag, value, force: false }, { timeoutMs: 10_000 });
    };
    await setAll('timestamp_history_retention_interval_sec', '1');
    await setAll('history_gc_interval_sec', '1');
    await setAll('history_gc_min_new_versions_pct', '0');
    try {
      await t.upsert({ id: 5n, v: 'after' });
      // Wait (bounded) until every tablet's history GC has run past `at`.
      let tooOld = false;
      let waits = 0;
      for (let i = 0; i < 240 && !tooOld; i++, waits++) {
        try {
          for await (const page of t.scanCellPages({ asOf: at, pageRows: 1, pagesPerTabletMax: 1 })) void page;
          await t.upsert({ id: 6n, v: `w${i}` });
          await new Promise((res) => setTimeout(res, 250));
        } catch (e) {
          tooOld = (e as { code?: string }).code === ErrorCode.SNAPSHOT_TOO_OLD;
          if (!tooOld) throw e;
        }
      }
      process.stdout.write(`backup: history GC passed the restore point after ${waits} waits\n`);
      expect(tooOld, 'history GC passed the restore point').toBe(true);
      const old = await cli(['admin', 'restore_table', 'pitr', '--as_of', at.toString(), '--into', 'pitr_old']);
      expect(old.code).not.toBe(0);
      expect(old.out).toMatch(/SNAPSHOT_TOO_OLD.*older than the table's retained history/);
      expect((await c.listTables()).map((x) => x.name).filter((n) => n.startsWith('pitr_old'))).toEqual([]);
    } finally {
      await setAll('timestamp_history_retention_interval_sec', '900');
      await setAll('history_gc_interval_sec', '300');
      await setAll('history_gc_min_new_versions_pct', '10');
    }
  }, 180_000);
});

