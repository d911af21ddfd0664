import { MemoryEngine } from '../../docdb/memory-engine';
import type { KvEngine } from '../../docdb/kv-engine';
import { kvEngineCompliance } from './kv-engine-compliance';
import { describe, expect, it } from 'vitest';

kvEngineCompliance('memory', {
  create: () => Promise.resolve(new MemoryEngine()),
  reopen: async (e: KvEngine) => {
    await e.close();
    return (e as MemoryEngine).reopen();
  },
});

describe('memory engine internals', () => {
  it('memory engine: deleted keys are purged once no iterator is open (bounded memory)', async () => {
    const e = new MemoryEngine();
    const ops = Array.from({ length: 3000 }, (_, i) => ({ type: 'put' as const, key: Buffer.from(`k${i}`), value: Buffer.from('v') }));
    await e.write(ops);
    const it = e.iterator();
    await e.write([{ type: 'delRange', start: Buffer.from('k'), end: Buffer.from('l') }]);
    expect((await e.stats()).keysApprox).toBe(0);
    // The open iterator still sees its snapshot.
    let n = 0;
    while ((await it.next()) !== undefined) n++;
    expect(n).toBe(3000);
    await it.close();
    const it2 = e.iterator();
    expect(await it2.next()).toBeUndefined();
    await it2.close();
  });
});
