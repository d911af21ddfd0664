import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { RocksDbEngine } from '../../docdb';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function walBytes(dir: string): number {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.log')).reduce((a, n) => a + fs.statSync(path.join(dir, n)).size, 0);
}

// A split's checkpoint (tserver/tablet-manager.ts) carries the parent's memtable as a copy of its
// RocksDB WAL; opening the checkpoint once writes it to a table file, so the clones the children open
// replay (next to) nothing. Table files are hard links of the parent's.
it('checkpoint: table files linked, the memtable in the copied WAL; one open of the checkpoint leaves it in a table file and the WAL empty', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-checkpoint-'));
  dirs.push(dir);
  const e = await RocksDbEngine.open(path.join(dir, 'db'), { writeBufferBytes: 64 << 20 });
  const key = (i: number) => Buffer.from(`k${String(i).padStart(6, '0')}`);
  const value = Buffer.alloc(1000, 7);
  for (let i = 0; i < 2000; i += 100) await e.write(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value })));
  await e.flush();
  for (let i = 2000; i < 4000; i += 100) await e.write(Array.from({ length: 100 }, (_, j) => ({ type: 'put' as const, key: key(i + j), value })));
  expect(e.memtableEntries()).toBe(2000);
  const cp = path.join(dir, 'cp');
  const r = await e.checkpointTo(cp);
  await e.close();
  expect(r?.linkedFiles).toBeGreaterThan(0);
  expect(walBytes(cp)).toBeGreaterThan(2000 * 1000);
  const once = await RocksDbEngine.open(cp);
  await once.close();
  expect(walBytes(cp)).toBeLessThan(4096);
  const child = await RocksDbEngine.open(cp);
  try {
    expect(child.memtableEntries()).toBe(0);
    let n = 0;
    const it = child.iterator({});
    for (let kv = await it.next(); kv; kv = await it.next()) n++;
    await it.close();
    expect(n).toBe(4000);
  } finally {
    await child.close();
  }
});
