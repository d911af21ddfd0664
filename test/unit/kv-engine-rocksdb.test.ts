import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import type { KvEngine } from '../../docdb/kv-engine';
import { kvEngineCompliance } from './kv-engine-compliance';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-kv-rocksdb-'));
let n = 0;
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

kvEngineCompliance('rocksdb', {
  create: () => RocksDbEngine.open(path.join(root, `db${n++}`)),
  reopen: async (e: KvEngine) => {
    const loc = (e as RocksDbEngine).location;
    await e.close();
    return RocksDbEngine.open(loc);
  },
});

describe('rocksdb engine: open', () => {
  it('rocksdb: a corrupt database fails open() with CORRUPTION naming it (no crash: the process stays up); once removed, the directory opens afresh', async () => {
    const loc = path.join(root, 'corrupt');
    const e = await RocksDbEngine.open(loc);
    await e.write([{ type: 'put', key: Buffer.from('k'), value: Buffer.from('v') }]);
    await e.close();
    fs.writeFileSync(path.join(loc, 'CURRENT'), 'not-a-manifest\n');
    const err = await RocksDbEngine.open(loc).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe(ErrorCode.CORRUPTION);
    expect((err as DbError).message).toContain('CURRENT file corrupted');
    expect((err as DbError).message).toContain(loc);
    fs.rmSync(loc, { recursive: true, force: true });
    const fresh = await RocksDbEngine.open(loc);
    expect(await fresh.get(Buffer.from('k'))).toBeUndefined();
    await fresh.close();
  });

  it('rocksdb: a second open of a directory this process holds fails with IO_ERROR (its LOCK), not a crash', async () => {
    const loc = path.join(root, 'held');
    const e = await RocksDbEngine.open(loc);
    await expect(RocksDbEngine.open(loc)).rejects.toMatchObject({ code: ErrorCode.IO_ERROR });
    await e.close();
  });
});
