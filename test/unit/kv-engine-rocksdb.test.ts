import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll } from 'vitest';
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
