/**
 * The client side of distributed transactions against a scripted fake cluster (no sockets): what
 * the client sends (TxnContextPB, participants, heartbeats), how it settles a lost commit answer,
 * and which failures end a transaction without resending an operation that may have applied.
 */
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { READ_RESTARTS_MAX, WRITE_BYTES_PER_RPC_MAX } from '../../client/table';
import { TesseraClient } from '../../client/tessera-client';
import { clients, connect, FakeCluster, waitFor, type Req } from './client-txn-fake';

describe('client transactions (fake cluster)', () => {
  it('txn: begin follows the status tablet leader, ops carry TxnContextPB, commit sends exactly the written tablets', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction({ isolation: 'snapshot', priority: 0.25 });
    expect(txn.txnId).toMatch(/^[0-9a-f]{32}$/);
    expect(txn.statusTablet).toBe('s0');
    expect(txn.readHt).toBe(1000n);
    // Rows 1 and 3 hash to different tablets? Write enough keys to touch both.
    for (let i = 0n; i < 8n; i++) await txn.table('demo').upsert({ id: i, value: `v${i}` });
    const writes = f.calls.filter((x) => x.method === 'TabletServerService.Write');
    expect(writes).toHaveLength(8);
    for (const w of writes) {
      expect(w.req['txn']).toEqual({ txnId: txn.txnId, statusTablet: 's0', isolation: 'snapshot', priority: 0.25, startHt: 1000n, readHt: 1000n });
    }
    const written = new Set(writes.map((w) => w.req['tabletId'] as string));
    expect(written.size).toBe(2);
    const row = await txn.get('demo', { id: 1n });
    expect(row).toEqual({ id: 1n, value: 'own' });
    const read = f.calls.find((x) => x.method === 'TabletServerService.Read')!;
    expect(read.req['readHt']).toBe(1000n);
    expect((read.req['txn'] as Req)['txnId']).toBe(txn.txnId);
    await txn.scan('demo');
    for (const s of f.calls.filter((x) => x.method === 'TabletServerService.Scan')) expect(s.req['readHt']).toBe(1000n);
    // Snapshot reads do not make a tablet a participant: only the two written ones.
    const r = await txn.commit();
    expect(r.commitHt).toBe(2000n);
    expect(txn.state).toBe('committed');
    const commit = f.calls.find((x) => x.method === 'TransactionCoordinatorService.CommitTransaction' && x.address === 'ts-b')!;
    expect(new Set(commit.req['participantTablets'] as string[])).toEqual(written);
    await expect(txn.table('demo').upsert({ id: 1n, value: 'late' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });

  it('txn: a deferWrites transaction has no status record until it needs one — blind writes on one tablet commit without CreateTransaction or AbortTransaction, a read creates it first', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const coordinator = (): number => f.calls.filter((x) => x.method.startsWith('TransactionCoordinatorService.')).length;
    // Blind writes, one tablet: one Write with a context carrying no status tablet and no read time.
    const t = await c.beginTransaction({ deferWrites: true, priority: 0.5 });
    expect(t.hasStatusRecord).toBe(false);
    await t.table('demo').upsert({ id: 1n, value: 'a' });
    expect(await t.commit()).toEqual({ commitHt: 1500n });
    expect(t.commitPath).toBe('single-tablet');
    expect(coordinator()).toBe(0);
    const w = f.calls.find((x) => x.method === 'TabletServerService.Write')!;
    expect(w.req['singleTabletCommit']).toBe(true);
    expect(w.req['txn']).toEqual({ txnId: t.txnId, isolation: 'snapshot', priority: 0.5 });
    // Aborting a transaction without a record sends nothing either.
    const a = await c.beginTransaction({ deferWrites: true });
    await a.table('demo').upsert({ id: 1n, value: 'b' });
    await a.abort();
    expect(coordinator()).toBe(0);
    // A read needs the read time: the record is created first (and the read carries it), then the
    // fast-path commit drops it with one AbortTransaction.
    const r = await c.beginTransaction({ deferWrites: true });
    expect(await r.get('demo', { id: 1n })).toEqual({ id: 1n, value: 'own' });
    expect(r.hasStatusRecord).toBe(true);
    expect(f.count('TransactionCoordinatorService.CreateTransaction')).toBeGreaterThan(0);
    const read = f.calls.find((x) => x.method === 'TabletServerService.Read')!;
    expect(read.req['txn']).toMatchObject({ txnId: r.txnId, statusTablet: 's0', readHt: 1000n });
    await r.table('demo').upsert({ id: 1n, value: 'c' });
    await r.commit();
    expect(r.commitPath).toBe('single-tablet');
    await waitFor(() => f.calls.some((x) => x.method === 'TransactionCoordinatorService.AbortTransaction' && (x.req['txnId'] as string) === r.txnId));
  });

  it('txn: heartbeats run while pending and stop at commit', async () => {
    const f = new FakeCluster();
    const c = await connect(f, 20_000);
    const txn = await c.beginTransaction();
    await waitFor(() => f.count('TransactionCoordinatorService.HeartbeatTransaction') >= 3);
    await txn.commit();
    const n = f.count('TransactionCoordinatorService.HeartbeatTransaction');
    // Time passes after the commit: the sleep is the scenario (no heartbeat may follow).
    await new Promise((r) => setTimeout(r, 100));
    // At most one heartbeat was already in flight when the commit answered.
    expect(f.count('TransactionCoordinatorService.HeartbeatTransaction')).toBeLessThanOrEqual(n + 1);
  });

  it('txn: a heartbeat answered ABORTED makes the next operation fail with TXN_ABORTED', async () => {
    const f = new FakeCluster();
    const c = await connect(f, 20_000);
    const txn = await c.beginTransaction();
    f.on('TransactionCoordinatorService.HeartbeatTransaction', () => ({ status: 'ABORTED' }));
    await waitFor(() => txn.state === 'aborted');
    await expect(txn.table('demo').upsert({ id: 1n, value: 'x' })).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    await expect(txn.commit()).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    expect(f.count('TransactionCoordinatorService.CommitTransaction')).toBe(0);
  });

  it('txn: TXN_CONFLICT on a write is not retried, ends the transaction and asks the coordinator to abort', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    f.on('TabletServerService.Write', () => {
      throw new DbError(ErrorCode.TXN_CONFLICT, 'conflicts with another transaction');
    });
    await expect(txn.upsert('demo', { id: 1n, value: 'x' })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect(f.count('TabletServerService.Write')).toBe(1);
    await expect(txn.get('demo', { id: 1n })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    await waitFor(() => f.calls.some((x) => x.method === 'TransactionCoordinatorService.AbortTransaction' && x.address === 'ts-b'));
  });

  it('txn: a write with an unknown outcome (NETWORK_ERROR) is resent as the same retryable request; one whose outcome stays unknown ends the transaction', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    let lost = 2;
    f.on('TabletServerService.Write', () => {
      if (lost-- > 0) throw new DbError(ErrorCode.NETWORK_ERROR, 'connection lost after send');
      return { writeHt: 10n, propagatedHt: 10n };
    });
    await txn.upsert('demo', { id: 1n, value: 'x' });
    const sent = f.calls.filter((x) => x.method === 'TabletServerService.Write').map((x) => `${String(x.req['clientId'])}/${String(x.req['requestId'])}`);
    expect(sent.length).toBe(3);
    expect(new Set(sent).size).toBe(1);
    // Never answered within the deadline: the outcome is unknown, the transaction ends.
    f.on('TabletServerService.Write', () => {
      throw new DbError(ErrorCode.NETWORK_ERROR, 'connection lost after send');
    });
    await expect(txn.upsert('demo', { id: 2n, value: 'y' }, { timeoutMs: 300 })).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    const ids = f.calls.filter((x) => x.method === 'TabletServerService.Write').map((x) => String(x.req['requestId']));
    expect(ids.length).toBeGreaterThan(4);
    expect(new Set(ids.slice(3)).size).toBe(1);
    expect(ids[3]).not.toBe(ids[0]);
    await expect(txn.commit()).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
  });

  it('txn: READ_RESTART inside a transaction surfaces at once (no resend at the same read time)', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    f.on('TabletServerService.Read', () => {
      throw new DbError(ErrorCode.READ_RESTART, 'value in the uncertainty window');
    });
    await expect(txn.get('demo', { id: 1n })).rejects.toMatchObject({ code: ErrorCode.READ_RESTART });
    expect(f.count('TabletServerService.Read')).toBe(1);
    expect(txn.state).toBe('failed');
  });

  it('txn: READ_RESTART on the first read moves the read time (same limit) and reads again; every later op and the commit use it', async () => {
    const f = new FakeCluster();
    f.on('TransactionCoordinatorService.CreateTransaction', () => ({ readHt: 1000n, propagatedHt: 1000n, globalLimitHt: 5000n }));
    const c = await connect(f);
    const txn = await c.beginTransaction();
    let reads = 0;
    f.on('TabletServerService.Read', (r) => {
      if (reads++ === 0) throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: String((r['txn'] as Req)['readHt']), restartHt: '1200', globalLimitHt: '5000' });
      return { rows: [], found: [false], readHt: (r['txn'] as Req)['readHt'] };
    });
    expect(await txn.get('demo', { id: 1n })).toBeUndefined();
    const sent = f.calls.filter((x) => x.method === 'TabletServerService.Read').map((x) => x.req['txn'] as Req);
    expect(sent.map((t) => [t['readHt'], t['globalLimitHt'], t['startHt']])).toEqual([
      [1000n, 5000n, 1000n],
      [1200n, 5000n, 1000n],
    ]);
    expect(txn.readHt).toBe(1200n);
    expect(txn.readRestarts).toBe(1);
    await txn.upsert('demo', { id: 2n, value: 'x' });
    const w = f.calls.find((x) => x.method === 'TabletServerService.Write')!;
    expect((w.req['txn'] as Req)['readHt']).toBe(1200n);
    await txn.commit();
    const commit = f.calls.find((x) => x.method === 'TransactionCoordinatorService.CommitTransaction' && x.address === 'ts-b')!;
    // The coordinator's clock passes the moved read time before it picks the commit time.
    expect(commit.req['propagatedHt'] as bigint).toBeGreaterThanOrEqual(1200n);
  });

  it('txn: READ_RESTART after the read time was used (a read returned, or a write was sent) ends the transaction with a clear, retryable READ_RESTART', async () => {
    for (const first of ['read', 'write'] as const) {
      const f = new FakeCluster();
      f.on('TransactionCoordinatorService.CreateTransaction', () => ({ readHt: 1000n, propagatedHt: 1000n, globalLimitHt: 5000n }));
      const c = await connect(f);
      const txn = await c.beginTransaction();
      if (first === 'read') await txn.get('demo', { id: 1n });
      else await txn.upsert('demo', { id: 1n, value: 'x' });
      f.on('TabletServerService.Read', () => {
        throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: '1000', restartHt: '1200', globalLimitHt: '5000' });
      });
      const before = f.count('TabletServerService.Read');
      const err = (await txn.get('demo', { id: 2n }).catch((e: unknown) => e)) as DbError;
      expect(err).toMatchObject({ code: ErrorCode.READ_RESTART, retryable: true, details: { txnId: txn.txnId, restartHt: '1200' } });
      expect(err.message).toContain('retry the transaction');
      expect(f.count('TabletServerService.Read')).toBe(before + 1);
      expect(txn.readHt).toBe(1000n);
      expect(txn.state).toBe('failed');
      await expect(txn.commit()).rejects.toMatchObject({ code: ErrorCode.READ_RESTART });
    }
  });

  it('txn: a transactional scan that restarts before any row reached the caller moves the read time and rescans every tablet at it', async () => {
    const f = new FakeCluster();
    f.on('TransactionCoordinatorService.CreateTransaction', () => ({ readHt: 1000n, propagatedHt: 1000n, globalLimitHt: 5000n }));
    const c = await connect(f);
    const txn = await c.beginTransaction();
    let restarted = false;
    f.on('TabletServerService.Scan', (r) => {
      const t = r['txn'] as Req;
      if (r['tabletId'] === 'd1' && !restarted) {
        restarted = true;
        throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: String(t['readHt']), restartHt: '1300', globalLimitHt: '5000' });
      }
      return { rows: [{ key: { hash: 1, hashed: [{ int64Value: r['tabletId'] === 'd0' ? 1n : 2n }] }, columns: [] }], readHt: t['readHt'] };
    });
    const rows = await txn.scan('demo');
    expect(rows.map((x) => x['id'])).toEqual([1n, 2n]);
    const scans = f.calls.filter((x) => x.method === 'TabletServerService.Scan').map((x) => [x.req['tabletId'], (x.req['txn'] as Req)['readHt']]);
    expect(scans).toEqual([
      ['d0', 1000n],
      ['d1', 1000n],
      ['d0', 1300n],
      ['d1', 1300n],
    ]);
    await txn.abort();
  });

  it('txn: a lost commit answer is settled by GetTransactionStatus (COMMITTED -> its commit time, not a blind resend)', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    await txn.upsert('demo', { id: 1n, value: 'x' });
    f.on('TransactionCoordinatorService.CommitTransaction', () => {
      throw new DbError(ErrorCode.TIMED_OUT, 'answer lost');
    });
    f.on('TransactionCoordinatorService.GetTransactionStatus', (r) => ({ statuses: [{ txnId: (r['txnIds'] as string[])[0], status: 'COMMITTED', commitHt: 3000n }] }));
    await expect(txn.commit()).resolves.toEqual({ commitHt: 3000n });
    expect(f.calls.filter((x) => x.method === 'TransactionCoordinatorService.CommitTransaction' && x.address === 'ts-b')).toHaveLength(1);
  });

  it('txn: a commit to a status tablet leader that hangs gives up after rpcSingleCallTimeoutMs and is settled with the new leader (PENDING -> resent there)', async () => {
    const f = new FakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['m'], transport: f.transport(), timeoutMs: 5_000, rpcSingleCallTimeoutMs: 100 });
    clients.push(c);
    const txn = await c.beginTransaction();
    await txn.upsert('demo', { id: 1n, value: 'x' });
    const attempts: Array<{ address: string; timeoutMs: number | undefined }> = [];
    f.on('TransactionCoordinatorService.CommitTransaction', (_r, address, timeoutMs) => {
      attempts.push({ address, timeoutMs });
      if (address === 'ts-b') {
        // ts-b is paused: no answer; meanwhile ts-a is elected.
        f.statusLeader = 'ts-a';
        return new Promise((_, reject) => setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, 'no answer')), timeoutMs));
      }
      return { commitHt: 4000n };
    });
    f.on('TransactionCoordinatorService.GetTransactionStatus', () => ({ statuses: [{ txnId: txn.txnId, status: 'PENDING' }] }));
    await expect(txn.commit()).resolves.toEqual({ commitHt: 4000n });
    expect(attempts).toEqual([
      { address: 'ts-b', timeoutMs: 100 },
      { address: 'ts-a', timeoutMs: 100 },
    ]);
  });

  it('txn: begin on a status tablet leader that hangs gives up after rpcSingleCallTimeoutMs and begins again with a fresh id (the orphan record expires)', async () => {
    const f = new FakeCluster();
    const c = await TesseraClient.connect({ masterAddresses: ['m'], transport: f.transport(), timeoutMs: 5_000, rpcSingleCallTimeoutMs: 100 });
    clients.push(c);
    const creates: Array<{ address: string; txnId: string; timeoutMs: number | undefined }> = [];
    f.on('TransactionCoordinatorService.CreateTransaction', (r, address, timeoutMs) => {
      creates.push({ address, txnId: r['txnId'] as string, timeoutMs });
      if (address === 'ts-b') {
        f.statusLeader = 'ts-a';
        return new Promise((_, reject) => setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, 'no answer')), timeoutMs));
      }
      return { readHt: 1000n, propagatedHt: 1000n };
    });
    const txn = await c.beginTransaction();
    expect(creates.map((x) => [x.address, x.timeoutMs])).toEqual([
      ['ts-b', 100],
      ['ts-a', 100],
    ]);
    expect(creates[0]!.txnId).not.toBe(creates[1]!.txnId);
    expect(txn.txnId).toBe(creates[1]!.txnId);
    await txn.abort();
  });

  it('txn: after a lost commit answer, ABORTED from the status tablet stays "outcome unknown" (a forgotten commit reads ABORTED)', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    await txn.upsert('demo', { id: 1n, value: 'x' });
    f.on('TransactionCoordinatorService.CommitTransaction', () => {
      throw new DbError(ErrorCode.NETWORK_ERROR, 'connection reset');
    });
    f.on('TransactionCoordinatorService.GetTransactionStatus', () => ({ statuses: [{ txnId: txn.txnId, status: 'ABORTED' }] }));
    const err = await txn.commit().catch((e: DbError) => e);
    expect(err).toMatchObject({ code: ErrorCode.TIMED_OUT, details: { outcome: 'unknown' } });
    // The status request carried the transaction's start time (CreateTransaction's read time).
    expect(f.calls.find((x) => x.method === 'TransactionCoordinatorService.GetTransactionStatus')?.req['startHts']).toEqual([1000n]);
  });

  it('txn: after a lost commit answer, ABORTED proven never committed (neverCommitted) is a definite TXN_ABORTED, not "outcome unknown"', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    await txn.upsert('demo', { id: 1n, value: 'x' });
    f.on('TransactionCoordinatorService.CommitTransaction', () => {
      throw new DbError(ErrorCode.NETWORK_ERROR, 'connection reset');
    });
    f.on('TransactionCoordinatorService.GetTransactionStatus', (r) => {
      expect(r['startHts']).toEqual([1000n]);
      return { statuses: [{ txnId: txn.txnId, status: 'ABORTED', neverCommitted: true }] };
    });
    const err = await txn.commit().catch((e: DbError) => e);
    expect(err).toMatchObject({ code: ErrorCode.TXN_ABORTED, details: { outcome: 'aborted' } });
    expect(txn.state).toBe('aborted');
  });

  it('txn: a resent commit that finds no record asks the status again — definite when proven never committed, else "outcome unknown"', async () => {
    for (const never of [true, false]) {
      const f = new FakeCluster();
      const c = await connect(f);
      const txn = await c.beginTransaction();
      await txn.upsert('demo', { id: 1n, value: 'x' });
      let commits = 0;
      f.on('TransactionCoordinatorService.CommitTransaction', () => {
        if (commits++ === 0) throw new DbError(ErrorCode.TIMED_OUT, 'answer lost');
        throw new DbError(ErrorCode.TXN_ABORTED, 'transaction is not known to its status tablet');
      });
      let asked = 0;
      f.on('TransactionCoordinatorService.GetTransactionStatus', () => (asked++ === 0 ? { statuses: [{ txnId: txn.txnId, status: 'PENDING' }] } : { statuses: [{ txnId: txn.txnId, status: 'ABORTED', neverCommitted: never }] }));
      const err = await txn.commit().catch((e: DbError) => e);
      expect(commits).toBe(2);
      expect(asked).toBe(2);
      expect(err).toMatchObject(never ? { code: ErrorCode.TXN_ABORTED, details: { outcome: 'aborted' } } : { code: ErrorCode.TIMED_OUT, details: { outcome: 'unknown' } });
    }
  });

  it('txn: abort tells the coordinator the participants; later operations fail with TXN_ABORTED', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    await txn.upsert('demo', { id: 1n, value: 'x' });
    await txn.abort();
    const a = f.calls.find((x) => x.method === 'TransactionCoordinatorService.AbortTransaction' && x.address === 'ts-b')!;
    expect(a.req['participantTablets']).toEqual(txn.participants());
    expect(txn.participants()).toHaveLength(1);
    await expect(txn.upsert('demo', { id: 2n, value: 'y' })).rejects.toMatchObject({ code: ErrorCode.TXN_ABORTED });
    await txn.abort();
  });

  it('txn: upsertMany of large rows splits write RPCs by bytes (at most WRITE_BYTES_PER_RPC_MAX of values each, rows in order)', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const txn = await c.beginTransaction();
    const big = 'x'.repeat(1 << 20);
    await txn.table('demo').upsertMany(Array.from({ length: 20 }, (_, i) => ({ id: BigInt(i), value: big })));
    const writes = f.calls.filter((x) => x.method === 'TabletServerService.Write');
    const rows = writes.map((w) => (w.req['ops'] as unknown[]).length);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(20);
    for (const n of rows) expect(n).toBeLessThanOrEqual(Math.floor(WRITE_BYTES_PER_RPC_MAX / (1 << 20)));
    for (const w of writes) expect((w.req['txn'] as Req)['txnId']).toBe(txn.txnId);
    await txn.abort();
  });

  it('txn: isolation serializable is asked of the coordinator and carried by every request; unknown levels are INVALID_ARGUMENT', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    const t = await c.beginTransaction({ isolation: 'serializable' });
    expect(t.isolation).toBe('serializable');
    expect(f.calls.find((x) => x.method === 'TransactionCoordinatorService.CreateTransaction')?.req['isolation']).toBe('serializable');
    expect(t.context().isolation).toBe('serializable');
    expect(t.registersReads).toBe(true);
    await t.abort();
    const creates = f.count('TransactionCoordinatorService.CreateTransaction');
    await expect(c.beginTransaction({ isolation: 'read-committed' as 'snapshot' })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(f.count('TransactionCoordinatorService.CreateTransaction')).toBe(creates);
  });
});

describe('client reads outside a transaction: read restarts', () => {
  it('read: READ_RESTART is retried at the restart time with the same global limit (transparently)', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    let n = 0;
    f.on('TabletServerService.Read', (r) => {
      if (n++ === 0) throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: '100', restartHt: '150', globalLimitHt: '600' });
      return { rows: [{ key: { hash: 1, hashed: [{ int64Value: 1n }] }, columns: [{ columnId: 2, value: { stringValue: 'new' } }] }], found: [true], readHt: r['readHt'], globalLimitHt: r['globalLimitHt'] };
    });
    expect(await c.table('demo').get({ id: 1n })).toEqual({ id: 1n, value: 'new' });
    const sent = f.calls.filter((x) => x.method === 'TabletServerService.Read').map((x) => [x.req['readHt'], x.req['globalLimitHt']]);
    expect(sent).toEqual([
      [0n, undefined],
      [150n, 600n],
    ]);
  });

  it('read: restarts are bounded (READ_RESTARTS_MAX), then READ_RESTART reaches the caller', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    let ht = 100;
    f.on('TabletServerService.Read', () => {
      ht += 1;
      throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: String(ht - 1), restartHt: String(ht), globalLimitHt: '100000' });
    });
    await expect(c.table('demo').get({ id: 1n })).rejects.toMatchObject({ code: ErrorCode.READ_RESTART });
    expect(f.count('TabletServerService.Read')).toBe(READ_RESTARTS_MAX + 1);
  });

  it('scan: a restart on a later tablet rescans from the first tablet at the restart time, keeping the first page\'s limit', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    let restarted = false;
    f.on('TabletServerService.Scan', (r) => {
      const readHt = (r['readHt'] as bigint) || 100n;
      if (r['tabletId'] === 'd1' && !restarted) {
        restarted = true;
        throw new DbError(ErrorCode.READ_RESTART, 'uncertain', { readHt: String(readHt), restartHt: '170', globalLimitHt: String(r['globalLimitHt']) });
      }
      return { rows: [{ key: { hash: 1, hashed: [{ int64Value: r['tabletId'] === 'd0' ? 1n : 2n }] }, columns: [] }], readHt, globalLimitHt: (r['globalLimitHt'] as bigint) || 600n };
    });
    expect((await c.table('demo').scan()).map((x) => x['id'])).toEqual([1n, 2n]);
    const sent = f.calls.filter((x) => x.method === 'TabletServerService.Scan').map((x) => [x.req['tabletId'], x.req['readHt'], x.req['globalLimitHt']]);
    expect(sent).toEqual([
      ['d0', 0n, undefined],
      ['d1', 100n, 600n],
      ['d0', 170n, 600n],
      ['d1', 170n, 600n],
    ]);
    // scanRows: once a row reached the caller, a restart is the caller's to handle.
    restarted = false;
    const it = c.table('demo').scanRows();
    const got: unknown[] = [];
    const err = await (async () => {
      for await (const row of it) got.push(row['id']);
    })().catch((e: unknown) => e);
    expect(got).toEqual([1n]);
    expect(err).toMatchObject({ code: ErrorCode.READ_RESTART, retryable: true });
  });
});

describe('client writes outside a transaction', () => {
  it('write: the transactions system table is not writable (NOT_SUPPORTED before any RPC), in or outside a transaction', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    await expect(c.table('transactions').upsert({ id: 1n })).rejects.toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    await expect(c.table('transactions').upsertMany([{ id: 1n }])).rejects.toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    await expect(c.table('transactions').delete({ id: 1n })).rejects.toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    const txn = await c.beginTransaction();
    await expect(txn.upsert('transactions', { id: 1n })).rejects.toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    expect(f.count('TabletServerService.Write')).toBe(0);
    await txn.abort();
  });

  it('write: a plain write answered TXN_CONFLICT (it met an unsettled transaction; nothing written) is retried with backoff', async () => {
    const f = new FakeCluster();
    const c = await connect(f);
    let n = 0;
    f.on('TabletServerService.Write', () => {
      if (n++ < 2) throw new DbError(ErrorCode.TXN_CONFLICT, 'write conflicts with pending txn');
      return { writeHt: 1500n, propagatedHt: 1500n };
    });
    await c.table('demo').upsert({ id: 1n, value: 'x' });
    expect(f.count('TabletServerService.Write')).toBe(3);
    // Inside a transaction the same code ends the transaction instead (covered above): no retry.
  });
});
