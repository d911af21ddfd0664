/**
 * `lab up` returns once the cluster can serve, not merely once every server answers healthz: the
 * masters' leader must see every tablet server alive. Stand-in master consoles on 127.0.0.1 answer
 * /api/v1/tablet-servers as a follower (NOT_THE_LEADER) or as the leader with some servers alive.
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode } from '../../../common';
import { type HealthTarget, waitAllHealthy, waitClusterReady } from '../../../lab';

type Answer = () => { status: number; body: unknown };

const servers: http.Server[] = [];

async function fakeMaster(answer: Answer): Promise<string> {
  const srv = http.createServer((req, res) => {
    const a = req.url === '/api/v1/tablet-servers' ? answer() : { status: 404, body: { code: 'NOT_FOUND' } };
    res.writeHead(a.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(a.body));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

const follower: Answer = () => ({ status: 503, body: { code: 'NOT_THE_LEADER', message: 'this master is not the leader' } });
const leaderWith = (alive: number, dead = 0): Answer => () => ({
  status: 200,
  body: { tabletServers: [...Array.from({ length: alive }, () => ({ alive: true })), ...Array.from({ length: dead }, () => ({ alive: false }))] },
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('waitClusterReady', () => {
  it('waits until the leader (whichever master it is) sees every tablet server alive', async () => {
    let calls = 0;
    // Registrations arrive over time: 1, then 2, then all 3 alive (one dead entry from an old run stays).
    const growing: Answer = () => {
      calls++;
      return leaderWith(Math.min(3, 1 + Math.floor(calls / 2)), 1)();
    };
    const urls = [await fakeMaster(follower), await fakeMaster(growing), await fakeMaster(follower)];
    await waitClusterReady(urls, 3, 10_000);
    expect(calls).toBeGreaterThanOrEqual(4);
  });

  it('TIMED_OUT naming what was missing: no leader, or too few tablet servers alive', async () => {
    const noLeader = [await fakeMaster(follower), await fakeMaster(follower)];
    const e1 = await waitClusterReady(noLeader, 3, 500).then(() => undefined, (e: unknown) => e);
    expect((e1 as { code?: string }).code).toBe(ErrorCode.TIMED_OUT);
    expect(String((e1 as Error).message)).toContain('no master answered as the leader');

    const short = [await fakeMaster(leaderWith(2, 1))];
    const e2 = await waitClusterReady(short, 3, 500).then(() => undefined, (e: unknown) => e);
    expect((e2 as { code?: string }).code).toBe(ErrorCode.TIMED_OUT);
    expect(String((e2 as Error).message)).toContain('sees 2 of 3 tablet server(s) alive');
  });

  it('a master that does not answer at all counts as no leader (the wait is bounded)', async () => {
    // A port nothing listens on (a server opened and closed again).
    const gone = await fakeMaster(follower);
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
    const e = await waitClusterReady([gone], 1, 300).then(() => undefined, (err: unknown) => err);
    expect((e as { code?: string }).code).toBe(ErrorCode.TIMED_OUT);
    expect(String((e as Error).message)).toContain('no master answered as the leader');
  });
});

describe('waitAllHealthy', () => {
  const target = (over: Partial<HealthTarget>): HealthTarget => ({
    node: 'n1',
    role: 'tserver',
    webUrl: 'http://127.0.0.1:1',
    healthy: async () => false,
    logTail: async (n) => Array.from({ length: Math.min(n, 3) }, (_, i) => `log line ${i}`),
    ...over,
  });

  it('returns once every server is healthy, asking again until then', async () => {
    let asked = 0;
    await waitAllHealthy([target({ healthy: async () => ++asked >= 3 }), target({ node: 'n2', healthy: async () => true })], 10_000);
    expect(asked).toBe(3);
  });

  it('a server that exited ends the wait at once with SERVER_EXITED, its exit and its log tail', async () => {
    // The wait's budget (600 s) is ten times the test's own timeout: only the exit can end it in time.
    const e = await waitAllHealthy([target({ node: 'n0', healthy: async () => true }), target({ gone: async () => 'exited with status 1' })], 600_000).then(
      () => undefined,
      (err: unknown) => err as { code?: string; message: string; details?: Record<string, unknown> },
    );
    expect(e?.code).toBe(ErrorCode.SERVER_EXITED);
    expect(e?.message).toMatch(/^node n1 tserver exited with status 1\n--- last 3 log lines of n1 tserver ---\nlog line 0\n/);
    expect(e?.details).toEqual({ node: 'n1', role: 'tserver' });
  });

  it('a server that never answers is TIMED_OUT after the timeout, naming it and how many more are not healthy', async () => {
    const e = await waitAllHealthy([target({ gone: async () => undefined }), target({ node: 'n2', logTail: async () => { throw new Error('no such file'); } })], 300).then(
      () => undefined,
      (err: unknown) => err as { code?: string; message: string },
    );
    expect(e?.code).toBe(ErrorCode.TIMED_OUT);
    expect(e?.message).toContain('node n1 tserver did not answer http://127.0.0.1:1/api/v1/healthz within 300 ms (and 1 more server(s) not healthy)');
  });

  it('a log that cannot be read is named in place of the tail', async () => {
    const e = await waitAllHealthy([target({ gone: async () => 'was killed', logTail: async () => { throw new Error('no such file'); } })], 10_000).then(
      () => undefined,
      (err: unknown) => err as { code?: string; message: string },
    );
    expect(e?.code).toBe(ErrorCode.SERVER_EXITED);
    expect(e?.message).toContain('(log not readable: no such file)');
  });
});
