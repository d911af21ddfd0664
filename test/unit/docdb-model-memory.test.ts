import { it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import { MemoryEngine } from '../../docdb/memory-engine';
import { perCellFlags } from './docdb-helpers';
import { runModel } from './docdb-model';

/** The model on memory engines; `perCell`: transactional upserts in the per-cell intent format (txn_packed_intents=false). */
async function run(perCell: boolean, runs: number): Promise<void> {
  const flags = perCell ? { flags: perCellFlags() } : {};
  await runModel(async () => {
    const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine(), ...flags });
    return {
      db,
      reopen: async (d: DocDb, crash: boolean) => {
        const r = d.regularDb.db.engine as MemoryEngine;
        const i = d.intentsDb.db.engine as MemoryEngine;
        if (crash) await Promise.all([r.close(), i.close()]);
        else await d.close();
        return DocDb.open({ regular: r.reopen(), intents: i.reopen(), ...flags });
      },
    };
  }, runs);
}

it('docdb model: random writes, txns, chunked applies, dropped columns, GC, restarts and reads match the MVCC model (memory engine)', async () => {
  await run(false, 300);
});

it('docdb model: the same with the per-cell intent format (txn_packed_intents=false)', async () => {
  await run(true, 100);
});
