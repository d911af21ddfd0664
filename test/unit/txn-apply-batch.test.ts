/**
 * One UpdateTransaction carrying several APPLYs becomes ONE Raft entry (APPLY_TXNS) on the participant
 * tablet, and every transaction in it is applied as if by an entry of its own — also after a restart.
 * Separate requests whose APPLYs reach the leader before its Raft takes its next Ready share one
 * entry too (apply-coalescer.ts; txn_coalesce_applies off: one entry per request).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { HybridClock } from '../../common/hybrid-clock';
import { SystemClock } from '../../common/clock';
import type { DocKey, TxnMeta } from '../../docdb/doc-db-api';
import { masterMethods, txnCoordinatorMethods, txnParticipantMethods } from '../../rpc/service-methods';
import type { RpcClient } from '../../rpc/types';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { TabletManager } from '../../tserver/tablet-manager';
import type { PeerTxnEnv, TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';
import { TxnService } from '../../tserver/transaction/txn-service';
import { TXN_COALESCE_APPLIES, TXN_LOCAL_UPDATES } from '../../tserver/transaction/txn-flags';
import type { UpdateBatcher } from '../../tserver/transaction/update-batcher';
import { PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';

const janitor = new PeerJanitor();
const { dirs, peers } = janitor;
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });
const txn = (id: string, startHt: bigint): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation: 'snapshot', priority: 0.5, startHt });

function statusEnv(statuses: Map<string, TxnStatusInfo>): PeerTxnEnv {
  return {
    getStatus: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
    known: (id) => {
      const st = statuses.get(id);
      return st && st.status !== 'PENDING' ? st : undefined;
    },
    abort: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
  };
}

async function openPeer(dir: string, env: PeerTxnEnv): Promise<TabletPeer> {
  const p = await TabletPeer.open(testPeerDeps(dir, { flags: new Flags(), txnEnv: env }));
  peers.push(p);
  await untilLeaderReady(p);
  return p;
}

function serviceOver(p: TabletPeer, flags = new Flags()): TxnService {
  const manager = { get: () => p, has: () => true, list: () => [p], addressOf: () => undefined } as unknown as TabletManager;
  const noRpc = { call: () => Promise.reject(new Error('no RPCs in this test')) } as unknown as RpcClient;
  return new TxnService({
    manager: () => manager,
    flags,
    clock: new HybridClock(new SystemClock()),
    log: silentLogger(),
    rng: new SeededRng(1),
    client: noRpc,
    masters: () => [],
    coordinatorMethods: txnCoordinatorMethods(),
    participantMethods: txnParticipantMethods(),
    masterMethods: masterMethods(),
  });
}

describe('APPLY batches', () => {
  it('txn-apply-batch: one UpdateTransaction of 3 APPLYs (one repeated) and a bad id is one entry; all 3 are applied, the bad id alone fails; a resend adds no entry; all survive a restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-apply-batch-'));
    dirs.push(dir);
    const statuses = new Map<string, TxnStatusInfo>();
    const env = statusEnv(statuses);
    const p = await openPeer(dir, env);
    const ids = ['b-1', 'b-2', 'b-3'];
    for (const [n, id] of ids.entries()) {
      statuses.set(id, { status: 'PENDING', priority: 0.5 });
      await p.writeIntents({ txn: txn(id, p.safeTime()), readHt: p.safeTime(), ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(n), columns: [{ columnId: 1, value: `v-${id}` }] } }] });
    }
    expect((await p.sizes()).intentsdb.intentCount).toBeGreaterThanOrEqual(3); // (a strong intent per cell written)
    const commits = ids.map(() => p.nextHt());
    ids.forEach((id, n) => statuses.set(id, { status: 'COMMITTED', commitHt: commits[n]!, priority: 0.5 }));

    const svc = serviceOver(p);
    const before = p.status().lastIndex;
    const r = await svc.updateTransaction({
      tabletId: p.tabletId,
      txnId: ids[0],
      type: 'APPLY',
      commitHt: commits[0],
      more: [
        { txnId: ids[1], type: 'APPLY', commitHt: commits[1] },
        { txnId: 'bad id!', type: 'APPLY', commitHt: commits[1] },
        { txnId: ids[2], type: 'APPLY', commitHt: commits[2] },
        { txnId: ids[0], type: 'APPLY', commitHt: commits[0] },
      ],
    });
    expect(r.results?.map((x) => x.code ?? '')).toEqual(['', '', ErrorCode.INVALID_ARGUMENT, '', '']);
    expect(p.status().lastIndex - before).toBe(1);
    for (const id of ids) await p.applyInProgress(TxnId(id));
    for (const [n, id] of ids.entries()) {
      expect(p.localOutcome(TxnId(id))).toMatchObject({ status: 'COMMITTED', commitHt: commits[n] });
      expect((await p.read([key(n)], {})).rows[0]?.columns.get(1)).toBe(`v-${id}`);
    }
    expect((await p.sizes()).intentsdb.intentCount).toBe(0);

    // The coordinator resends (its acknowledgement was lost): answered without a new entry.
    const again = await svc.updateTransaction({ tabletId: p.tabletId, txnId: ids[1], type: 'APPLY', commitHt: commits[1], more: [{ txnId: ids[2], type: 'APPLY', commitHt: commits[2] }] });
    expect(again.results?.map((x) => x.code ?? '')).toEqual(['', '']);
    expect(p.status().lastIndex - before).toBe(1);
    svc.stop();

    await p.stop();
    peers.splice(peers.indexOf(p), 1);
    const q = await openPeer(dir, env);
    for (const [n, id] of ids.entries()) expect((await q.read([key(n)], {})).rows[0]?.columns.get(1)).toBe(`v-${id}`);
    expect((await q.sizes()).intentsdb.intentCount).toBe(0);
  });

  it('txn-apply-batch: a status leader hands an APPLY to a participant leader in its own process without an RPC (txn_local_updates); off, it needs the RPC', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-apply-batch-'));
    dirs.push(dir);
    const statuses = new Map<string, TxnStatusInfo>();
    const p = await openPeer(dir, statusEnv(statuses));
    const flags = new Flags();
    const svc = serviceOver(p, flags); // its RPC client fails every call
    const updates = (svc as unknown as { updates: UpdateBatcher }).updates;
    for (const [n, local] of [true, false].entries()) {
      flags.set(TXN_LOCAL_UPDATES, local);
      const id = `local-${n}`;
      statuses.set(id, { status: 'PENDING', priority: 0.5 });
      await p.writeIntents({ txn: txn(id, p.safeTime()), readHt: p.safeTime(), ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(20 + n), columns: [{ columnId: 1, value: id }] } }] });
      const commitHt = p.nextHt();
      statuses.set(id, { status: 'COMMITTED', commitHt, priority: 0.5 });
      const sent = updates.update(p.tabletId, { txnId: TxnId(id), type: 'APPLY', commitHt }, 2000);
      if (!local) {
        await expect(sent).rejects.toThrow();
        continue;
      }
      await sent;
      await p.applyInProgress(TxnId(id));
      expect((await p.read([key(20 + n)], {})).rows[0]?.columns.get(1)).toBe(id);
    }
    svc.stop();
  });

  it('txn-apply-batch: a lone APPLY keeps its own APPLY_TXN entry and its error', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-apply-batch-'));
    dirs.push(dir);
    const statuses = new Map<string, TxnStatusInfo>();
    const p = await openPeer(dir, statusEnv(statuses));
    const svc = serviceOver(p);
    await expect(svc.updateTransaction({ tabletId: p.tabletId, txnId: 'x-1', type: 'APPLY', commitHt: 0n })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    statuses.set('x-1', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('x-1', p.safeTime()), readHt: p.safeTime(), ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(9), columns: [{ columnId: 1, value: 'lone' }] } }] });
    const commitHt = p.nextHt();
    statuses.set('x-1', { status: 'COMMITTED', commitHt, priority: 0.5 });
    const before = p.status().lastIndex;
    expect(await svc.updateTransaction({ tabletId: p.tabletId, txnId: 'x-1', type: 'APPLY', commitHt })).toEqual({});
    expect(p.status().lastIndex - before).toBe(1);
    await p.applyInProgress(TxnId('x-1'));
    expect((await p.read([key(9)], {})).rows[0]?.columns.get(1)).toBe('lone');
    svc.stop();
  });

  for (const coalesce of [true, false]) {
    it(`txn-apply-batch: 3 separate UpdateTransaction requests sent together are ${coalesce ? 'ONE entry (held until the next Ready)' : '3 entries with txn_coalesce_applies off'}; each is applied and answered`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-apply-batch-'));
      dirs.push(dir);
      const statuses = new Map<string, TxnStatusInfo>();
      const p = await openPeer(dir, statusEnv(statuses));
      const ids = ['c-1', 'c-2', 'c-3'];
      for (const [n, id] of ids.entries()) {
        statuses.set(id, { status: 'PENDING', priority: 0.5 });
        await p.writeIntents({ txn: txn(id, p.safeTime()), readHt: p.safeTime(), ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(20 + n), columns: [{ columnId: 1, value: `v-${id}` }] } }] });
      }
      const commits = ids.map(() => p.nextHt());
      ids.forEach((id, n) => statuses.set(id, { status: 'COMMITTED', commitHt: commits[n]!, priority: 0.5 }));
      const flags = new Flags();
      flags.set(TXN_COALESCE_APPLIES, coalesce);
      const svc = serviceOver(p, flags);
      const before = p.status().lastIndex;
      const answers = await Promise.all(ids.map((id, n) => svc.updateTransaction({ tabletId: p.tabletId, txnId: id, type: 'APPLY', commitHt: commits[n] })));
      expect(answers).toEqual([{}, {}, {}]);
      expect(p.status().lastIndex - before).toBe(coalesce ? 1 : 3);
      for (const id of ids) await p.applyInProgress(TxnId(id));
      for (const [n, id] of ids.entries()) {
        expect(p.localOutcome(TxnId(id))).toMatchObject({ status: 'COMMITTED', commitHt: commits[n] });
        expect((await p.read([key(20 + n)], {})).rows[0]?.columns.get(1)).toBe(`v-${id}`);
      }
      svc.stop();
    });
  }
});
