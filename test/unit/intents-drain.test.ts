/**
 * The verify run's provisional-records drain check (lab/verify/intents-drain.ts) against consoles
 * served on loopback: replicas that let go of their intents drain; one that keeps a transaction's
 * intents past the deadline is the anomaly intents-left-over, named with its server, tablet and
 * transaction; an unreachable console is listed, not judged.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkIntentsDrained, drainLine, withDrain } from '../../lab/verify/intents-drain';

type Txns = Array<{ txnId: string; intentCount: number; applyingCommitHt: string }>;

const servers: http.Server[] = [];

/** A console whose /api/v1/transactions lists `txns(poll)` on tablet t1 (poll counts from 0). */
async function fakeConsole(txns: (poll: number) => Txns): Promise<string> {
  let poll = 0;
  const s = http.createServer((req, res) => {
    if (req.url !== '/api/v1/transactions') {
      res.writeHead(404).end();
      return;
    }
    const list = txns(poll++);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ coordinators: [], participants: list.length ? [{ tabletId: 't1', table: 'tbl', role: 'FOLLOWER', transactions: list }] : [] }));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

const txn = (id: string, applying = ''): Txns[number] => ({ txnId: id, intentCount: 3, applyingCommitHt: applying });

describe('provisional records drain', () => {
  it('replicas that let go of their intents drain; the first poll counts what was open', async () => {
    const a = await fakeConsole((p) => (p < 3 ? [txn('x'), txn('y')] : []));
    const b = await fakeConsole(() => []);
    const r = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }, { name: 'ts1', webUrl: b }], timeoutMs: 10_000 });
    expect(r.drained).toBe(true);
    expect(r.openAtStart).toBe(2);
    expect(r.leftOver).toEqual([]);
    const v = withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, r);
    expect(v.valid).toBe(true);
    expect(v.details[0]).toContain('provisional records drained: no replica holds any intent');
  });

  it('a replica keeping a transaction\'s intents past the deadline is the anomaly intents-left-over, named with server, tablet and transaction', async () => {
    const a = await fakeConsole(() => []);
    const b = await fakeConsole(() => [txn('stuck', '7000000000')]);
    const r = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }, { name: 'ts1', webUrl: b }], timeoutMs: 600 });
    expect(r.drained).toBe(false);
    expect(r.ms).toBeGreaterThanOrEqual(600);
    expect(r.leftOver).toEqual([{ server: 'ts1', tabletId: 't1', table: 'tbl', txnId: 'stuck', intentCount: 3, applyingCommitHt: '7000000000' }]);
    const v = withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, r);
    expect(v.valid).toBe(false);
    expect(v.anomalies).toEqual({ 'intents-left-over': 1 });
    expect(drainLine(r)).toContain('LEFT OVER');
    expect(drainLine(r)).toContain('ts1 t1 (tbl) txn stuck: 3 intent(s), committed at 7000000000, apply not finished');
  });

  it('an unreachable console is listed, not judged', async () => {
    const a = await fakeConsole(() => []);
    const r = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }, { name: 'ts9', webUrl: 'http://127.0.0.1:1' }], timeoutMs: 400 });
    expect(r.drained).toBe(true);
    expect(r.unreachable).toEqual(['ts9']);
    expect(withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, r).valid).toBe(true);
    expect(drainLine(r)).toContain('not asked (console unreachable): ts9');
  });
});
