import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { runModel } from './docdb-model';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-docdb-model-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

it('docdb model: random writes, txns, chunked applies, dropped columns, GC, restarts and reads match the MVCC model (RocksDB engine)', async () => {
  await runModel(async () => {
    const dir = path.join(root, `run${n++}`);
    const open = async (): Promise<DocDb> =>
      DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) });
    return {
      db: await open(),
      reopen: async (d: DocDb, crash: boolean) => {
        // A crash of the process: what RocksDB was given survives, DocDB's deferred clean-ups do not.
        if (crash) await Promise.all([d.regularDb.db.engine.close(), d.intentsDb.db.engine.close()]);
        else await d.close();
        return open();
      },
    };
  }, 8);
});
