import { it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { runModel } from './docdb-model';

it('docdb model: random writes, txns, chunked applies, dropped columns, GC, restarts and reads match the MVCC model (memory engine)', async () => {
  await runModel(async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
    return {
      db,
      reopen: async (d: DocDb, crash: boolean) => {
        const r = d.regularDb.db.engine as MemoryEngine;
        const i = d.intentsDb.db.engine as MemoryEngine;
        if (crash) await Promise.all([r.close(), i.close()]);
        else await d.close();
        return DocDb.open({ regular: r.reopen(), intents: i.reopen() });
      },
    };
  }, 300);
});
