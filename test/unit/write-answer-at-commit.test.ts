/**
 * A plain write committed behind other applies is answered at Raft commit, before its apply
 * (tablet_write_answer_at_commit, docs/raft-write-path.md): what must still hold while the apply is held back — a read after the
 * answer sees the write, a copy of the request is answered with its time, the next write of the row
 * waits for the first one's apply (latches).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import type { DocKey } from '../../docdb/doc-db-api';
import { TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, WRITE_ANSWER_AT_COMMIT } from '../../tserver/tserver-flags';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { openTestPeer, PeerJanitor } from './tablet-peer-harness';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });
const upsert = (p: TabletPeer, i: number, v: string, request?: { clientId: string; requestId: number; minRunning: number }) =>
  p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 1, value: v }] } }], ...(request ? { request } : {}) });

/** Until the entry after `index` is committed, i.e. handed to the (held) apply stage: bounded polling. */
async function untilCommittedPast(p: TabletPeer, index: number): Promise<void> {
  for (let i = 0; i < 500 && p.raftGroup().status().commit <= index; i++) await new Promise((r) => setTimeout(r, 2));
  expect(p.raftGroup().status().commit).toBeGreaterThan(index);
}

/** Long enough that an answer given at commit comes well before the apply ends. */
const APPLY_HELD_MS = 1500;

async function peer(answerAtCommit: boolean): Promise<{ p: TabletPeer; flags: Flags }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-answer-'));
  janitor.dirs.push(dir);
  const flags = new Flags();
  flags.set(WRITE_ANSWER_AT_COMMIT, answerAtCommit);
  const p = await openTestPeer(dir, { flags });
  janitor.peers.push(p);
  return { p, flags };
}

describe('write answered at commit', () => {
  it('write path: a write committed behind another apply is answered at commit; a read after the answer waits for the apply and sees it; a copy gets the same time', async () => {
    const { p, flags } = await peer(true);
    await upsert(p, 1, 'old');
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, APPLY_HELD_MS);
    const appliedBefore = p.raftGroup().appliedOpId().index;
    // The first write's apply is held: the second one commits behind it.
    const first = upsert(p, 2, 'first');
    await untilCommittedPast(p, appliedBefore);
    const request = { clientId: 'c1', requestId: 1, minRunning: 1 };
    const ht = await upsert(p, 1, 'new', request);
    // Answered while both entries wait in the apply stage.
    expect(p.raftGroup().appliedOpId().index).toBe(appliedBefore);
    // A copy of the request is answered with the first one's time, not run again.
    expect(await upsert(p, 1, 'new', request)).toBe(ht);
    const read = await p.read([key(1)], {});
    expect(read.rows[0]?.columns.get(1)).toBe('new');
    expect(p.raftGroup().appliedOpId().index).toBeGreaterThan(appliedBefore);
    await first;
  }, 30_000);

  it('write path: a write committed with nothing to wait for is answered after its apply (one wake-up, not two)', async () => {
    const { p, flags } = await peer(true);
    await upsert(p, 3, 'a');
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, 200);
    const appliedBefore = p.raftGroup().appliedOpId().index;
    await upsert(p, 3, 'b');
    expect(p.raftGroup().appliedOpId().index).toBeGreaterThan(appliedBefore);
  }, 30_000);

  it('write path: the next write of the same row waits for the first one apply (its latches are held until then)', async () => {
    const { p, flags } = await peer(true);
    await upsert(p, 2, 'a');
    await p.read([key(2)], {});
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, APPLY_HELD_MS);
    const appliedBefore = p.raftGroup().appliedOpId().index;
    const first = upsert(p, 4, 'held');
    await untilCommittedPast(p, appliedBefore);
    await upsert(p, 2, 'b');
    expect(p.raftGroup().appliedOpId().index).toBe(appliedBefore);
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, 0);
    // An INSERT reads the row under its latches: it must see 'b' (applied), so ALREADY_EXISTS.
    const insert = await p.write({ ops: [{ kind: 'INSERT', op: { type: 'upsert', key: key(2), columns: [{ columnId: 1, value: 'c' }] } }] }).catch((e: unknown) => (e as { code?: string }).code);
    expect(insert).toBe('ALREADY_EXISTS');
    expect((await p.read([key(2)], {})).rows[0]?.columns.get(1)).toBe('b');
    await first;
  }, 30_000);

  it('write path: with tablet_write_answer_at_commit off the answer comes after the local apply', async () => {
    const { p, flags } = await peer(false);
    await upsert(p, 3, 'a');
    await p.read([key(3)], {});
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, 200);
    const appliedBefore = p.raftGroup().appliedOpId().index;
    await upsert(p, 3, 'b');
    expect(p.raftGroup().appliedOpId().index).toBeGreaterThan(appliedBefore);
  }, 30_000);
});
