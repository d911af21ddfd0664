import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { runCellModel } from './cell-model';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-cell-model-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

describe('cell model (HBase versions, deletes, TTL, retention)', () => {
  it('cell model: random timestamped puts, deletes, TTLs, GC and versioned / time-range / as-of / raw reads match the reference (memory engine)', async () => {
    await runCellModel(() => DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() }), 150);
  }, 120_000);

  it('cell model: the same histories agree on RocksDB (a temp dir)', async () => {
    await runCellModel(async () => {
      const dir = path.join(root, `run${n++}`);
      return DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) });
    }, 15);
  }, 120_000);
});
