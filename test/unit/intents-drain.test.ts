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

/**
 * A console whose /api/v1/transactions lists `txns(poll)` on tablet t1 (poll counts from 0), and whose
 * /api/v1/tablets shows tablet t1 with the strong-intent counter `counter(poll)` (404 without it).
 */
async function fakeConsole(txns: (poll: number) => Txns, counter?: (poll: number) => number): Promise<string> {
  let poll = 0;
  let tabletPolls = 0;
  const s = http.createServer((req, res) => {
    if (req.url === '/api/v1/tablets' && counter) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ tablets: [{ tabletId: 't1', table: 'tbl', state: 'RUNNING', intentsdb: { intentCount: counter(tabletPolls++) } }] }));
      return;
    }
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

  it('drained replicas whose strong-intent counters read 0 pass; one holding no intent but counting -2 is the anomaly intent-count-drift, named with server, tablet and count', async () => {
    const a = await fakeConsole(() => [], () => 0);
    const b = await fakeConsole(() => [], () => -2);
    const r = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }, { name: 'ts1', webUrl: b }], timeoutMs: 10_000 });
    expect(r.drained).toBe(true);
    expect(r.countDrift).toEqual([{ server: 'ts1', tabletId: 't1', table: 'tbl', intentCount: -2 }]);
    expect(r.countsUnread).toEqual([]);
    const v = withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, r);
    expect(v.valid).toBe(false);
    expect(v.anomalies).toEqual({ 'intent-count-drift': 1 });
    expect(drainLine(r)).toContain('strong-intent counter DRIFTED on 1 replica(s) holding no intent — ts1 t1 (tbl) counts -2');

    const ok = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }], timeoutMs: 10_000 });
    expect(ok.countDrift).toEqual([]);
    expect(withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, ok).valid).toBe(true);
    expect(drainLine(ok)).toContain('every strong-intent counter is 0');
  });

  it('a counter that is non-zero for a moment (a late write listed, then gone) is no drift; a server whose counters cannot be read is listed, not judged', async () => {
    // First counter poll: 4, with the transaction listed right after (it holds intents then); later 0.
    const a = await fakeConsole((p) => (p === 1 ? [txn('late')] : []), (p) => (p === 0 ? 4 : 0));
    const b = await fakeConsole(() => []);
    const r = await checkIntentsDrained({ tservers: [{ name: 'ts0', webUrl: a }, { name: 'ts1', webUrl: b }], timeoutMs: 10_000 });
    expect(r.drained).toBe(true);
    expect(r.countDrift).toEqual([]);
    expect(r.countsUnread).toEqual(['ts1']);
    expect(withDrain({ valid: true, anomalies: {}, lostWrites: 0, details: [] }, r).valid).toBe(true);
    expect(drainLine(r)).toContain('counters not read: ts1');
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
