/**
 * `lab status` / `tessera status` calls in flight (lab/rpcz-calls.ts): read from a console's
 * /api/v1/rpcz, summed both ways with the oldest call's age; a console that answers nonsense or
 * nothing gives no figure rather than a wrong one.
 */
import * as http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { callsCell, callsInFlight } from '../../../lab/rpcz-calls';

let server: http.Server | undefined;
afterEach(async () => {
  const s = server;
  server = undefined;
  if (s) await new Promise<void>((r) => s.close(() => r()));
});

/** A console on 127.0.0.1 answering /api/v1/rpcz with `body` (status 200) or `status`. */
async function console_(body: unknown, status = 200): Promise<string> {
  server = http.createServer((req, res) => {
    if (req.url !== '/api/v1/rpcz') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('lab: calls in flight from /rpcz', () => {
  it('lab rpcz calls: sums calls in flight over connections each way and keeps the oldest age of either side', async () => {
    const url = await console_({
      inbound: [
        { remote: '127.0.0.1:1', callsInFlight: 2, inFlight: [{ elapsedMs: 2500.5 }, { elapsedMs: 10 }] },
        { remote: '127.0.0.1:2', callsInFlight: 1, inFlight: [{ elapsedMs: 40 }] },
      ],
      outbound: [{ remote: '127.0.0.3:9100', callsInFlight: 150, inFlight: [{ elapsedMs: 3100 }] }],
    });
    const c = await callsInFlight(url);
    expect(c).toEqual({ inbound: 3, outbound: 150, oldestMs: 3100 });
    expect(callsCell(c)).toBe('3/150 (oldest 3.1 s)');
    expect(callsCell({ inbound: 1, outbound: 0, oldestMs: 999 })).toBe('1/0');
    expect(callsCell(undefined)).toBeUndefined();
  });

  it('lab rpcz calls: no connections is 0/0; fields of the wrong kind count as nothing', async () => {
    expect(await callsInFlight(await console_({ inbound: [], outbound: [] }))).toEqual({ inbound: 0, outbound: 0, oldestMs: 0 });
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    expect(await callsInFlight(await console_({ inbound: 'x', outbound: [{ callsInFlight: '7', inFlight: [{ elapsedMs: 'old' }] }] }))).toEqual({ inbound: 0, outbound: 0, oldestMs: 0 });
  });

  it('lab rpcz calls: a console without /rpcz, one answering an error or garbage, and no console at all give no figure', async () => {
    expect(await callsInFlight(await console_({ code: 'NOT_FOUND' }, 404))).toBeUndefined();
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    expect(await callsInFlight(await console_('{not json'))).toBeUndefined();
    const gone = (server!.address() as { port: number }).port;
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    expect(await callsInFlight(`http://127.0.0.1:${gone}`)).toBeUndefined();
  });
});
