import { describe, expect, it } from 'vitest';
import { WritePipeline } from '../../sql/exec/write-pipeline';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('sql write pipeline', () => {
  it('sql write pipeline: add() returns while fewer than max are under way, and waits for the oldest beyond', async () => {
    const p = new WritePipeline(2);
    const a = deferred();
    const b = deferred();
    await p.add(a.promise); // one under way: returns at once
    let returned = false;
    const second = p.add(b.promise).then(() => (returned = true));
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(false);
    a.resolve();
    await second;
    expect(returned).toBe(true);
    b.resolve();
    await p.drain();
  });

  it('sql write pipeline: the first failure is thrown by the next add() or by drain(); settle() waits without throwing', async () => {
    const p = new WritePipeline(4);
    const a = deferred();
    await p.add(a.promise);
    a.reject(new Error('first'));
    await p.settle();
    await expect(p.add(Promise.resolve())).rejects.toThrow('first');
    await expect(p.drain()).rejects.toThrow('first');
    const q = new WritePipeline(4);
    await q.add(Promise.reject(new Error('late')));
    await expect(q.drain()).rejects.toThrow('late');
  });
});
