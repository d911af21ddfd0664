/**
 * The benchmark cluster's start-up failure: a server that exits (here a tserver given a flag that does
 * not exist) fails start() at once — not after the 60 s wait — with the server, its exit code, the
 * first error its log names, and the logs kept outside the data directory that stop() removes.
 */
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BenchCluster } from '../../bench/bench-cluster';

describe('BenchCluster start-up failure', () => {
  it('bench cluster: a tserver that exits at start fails start() at once, naming it, its error and the kept logs', async () => {
    const c = new BenchCluster();
    let err: unknown;
    try {
      await c.start(1, 205, ['--no_such_flag_for_this_test=1'], { noAliasPortShift: 2050 });
    } catch (e) {
      err = e;
    } finally {
      await c.stop();
    }
    const msg = err instanceof Error ? err.message : String(err);
    expect(msg).toMatch(/^bench cluster did not come up: tserver \S+ exited \(code [1-9]\d*\)/);
    expect(msg).toContain('no_such_flag_for_this_test');
    expect(msg).not.toContain('not every server registered'); // ended by the exit, not by the wait's 60 s budget
    const kept = /logs kept in (\S+)$/.exec(msg)?.[1];
    expect(kept).toBe(`${c.baseDir}-logs`);
    try {
      expect(fs.existsSync(c.baseDir)).toBe(false); // stop() removed the data
      expect(fs.readdirSync(kept!).some((f) => f.startsWith('tserver-') && f.endsWith('.log'))).toBe(true);
    } finally {
      fs.rmSync(kept!, { recursive: true, force: true });
    }
  }, 60_000);
});
