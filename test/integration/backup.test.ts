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
import { importTables, tableDigest } from '../../client/backup/export-import';
import { readManifest } from '../../client/backup/backup-format';
import { TesseraClient } from '../../client/tessera-client';
import { ErrorCode } from '../../common/errors';
import { ProcCluster, runCliOn } from './cluster-harness';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-backup-it-'));
const ACCOUNTS = 8;
let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 58, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
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
    expect(r).toEqual([{ table: 'acct_restored', rows: 8 }]);
    const restored = await c.table('acct_restored').scan();
    expect(restored.length).toBe(ACCOUNTS);
    expect(restored.reduce((s, x) => s + (x['bal'] as bigint), 0n)).toBe(BigInt(ACCOUNTS * 100));
    expect((await tableDigest(c, 'acct_restored')).digest).toBe(m.tables[0]!.digest);

    // --as_of: the cut of the export, taken again afterwards from the past, holds the same rows.
    const asOf = await cli(['admin', 'export', '--tables', 'acct', '--to', path.join(DIR, 'as-of'), '--as_of', m.cutHt]);
    expect(asOf.code, asOf.out).toBe(0);
    expect(readManifest(path.join(DIR, 'as-of')).tables[0]!.digest).toBe(m.tables[0]!.digest);
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
    await expect(importTables(c, { from: bad, tables: ['acct'], into: 'acct_bad' })).rejects.toMatchObject({ code: ErrorCode.CORRUPTION, message: expect.stringMatching(/part acct\/part-00000\.ndjson is damaged/) });
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
});
