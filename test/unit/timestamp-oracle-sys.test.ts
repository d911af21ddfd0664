/**
 * The oracle over a real sys catalog (one master's Raft group, its log on disk): the mark is a
 * committed catalog entry before anything below it is served, and a restarted master starts above
 * every timestamp it served, even with its clock set back an hour.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { oracleBoundOf } from '../../master/catalog-state';
import { SysCatalog } from '../../master/sys-catalog';
import { TimestampOracle } from '../../master/timestamp-oracle';
import '../../master/master-flags';

const dirs: string[] = [];
const open: SysCatalog[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.stop().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function openOne(dir: string): Promise<SysCatalog> {
  const flags = new Flags();
  flags.setFromString('master_raft_election_timeout_ticks', '3');
  const sc = await SysCatalog.open({ dataDir: dir, selfId: '127.0.0.1:7100', peers: ['127.0.0.1:7100'], flags, log: silentLogger(), rng: new SeededRng(1), send: () => undefined });
  open.push(sc);
  for (let i = 0; i < 200 && !sc.isLeaderReady(); i++) {
    sc.tick();
    await new Promise((r) => setTimeout(r, 2));
  }
  expect(sc.isLeaderReady()).toBe(true);
  return sc;
}

function oracleOn(sc: SysCatalog, nowMs: () => number): { oracle: TimestampOracle; persisted: bigint[] } {
  const persisted: bigint[] = [];
  const oracle = new TimestampOracle(
    {
      store: {
        persistedBound: () => oracleBoundOf(sc.state()),
        persist: async (bound) => {
          await sc.propose({ type: 'reserveTimestamps', bound: bound.toString() });
          persisted.push(oracleBoundOf(sc.state()));
        },
      },
      nowMs,
    },
    { rangeMs: 20 },
  );
  return { oracle, persisted };
}

describe('timestamp oracle over the sys catalog', () => {
  it('oracle: every range served is below a committed mark, and a restarted master starts above all of them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-oracle-'));
    dirs.push(dir);
    const sc = await openOne(dir);
    let now = 1_700_000_000_000;
    const { oracle, persisted } = oracleOn(sc, () => now);
    let last = 0n;
    for (let i = 0; i < 40; i++) {
      now += 7; // a reservation every few calls (range 20 ms)
      const firsts = await Promise.all([3, 1, 9].map((n) => oracle.getTimestamps(n).then((f) => ({ f, n }))));
      for (const { f, n } of firsts) {
        // Served only below what the applied catalog holds as the mark.
        expect(f + BigInt(n)).toBeLessThanOrEqual(oracleBoundOf(sc.state()));
        // Rounds run one after the other: every timestamp of this round is above the last one's.
        expect(f).toBeGreaterThan(last);
      }
      last = firsts.reduce((m, { f, n }) => (f + BigInt(n) - 1n > m ? f + BigInt(n) - 1n : m), last);
    }
    expect(oracle.status().reservations).toBeGreaterThan(3);
    // Each reservation raised the committed mark.
    expect(persisted.every((b, i) => i === 0 || b > persisted[i - 1]!)).toBe(true);
    await sc.stop();
    open.splice(0);

    const again = await openOne(dir);
    const restarted = oracleOn(again, () => now - 3_600_000).oracle;
    expect(await restarted.getTimestamps(1)).toBeGreaterThan(last);
  }, 60_000);
});
