/**
 * Console mutations guarded (rpc/console-guard.ts, docs/security.md), on an in-process console: the
 * CSRF-shaped and DNS-rebinding requests a web page could send, credentials when a token or cluster
 * secret is configured, and the flag policy (force, dangerous TEST_ flags, start-only flags).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ALLOW_UNSAFE_FLAG_CHANGES, defineFlag, ENABLE_TEST_FLAGS, ErrorCode, Flags, FlagTag } from '../../common';
import { CLUSTER_SECRET_FILE } from '../../rpc/cluster-secret';
import { hostOf, isLoopbackHost, WEBSERVER_TOKEN_FILE } from '../../rpc/console-guard';
import { WebServer } from '../../rpc/web-server';
import { TEST_TRANSACTION_IGNORE_APPLYING_PROBABILITY } from '../../tserver/transaction/txn-flags';
import { TEST_FAIL_TABLET_REPLICA } from '../../tserver/tserver-flags';

const KNOB = defineFlag({ name: 'guard_test_runtime_knob', type: 'int', default: 1, help: 'a runtime flag', tags: [FlagTag.runtime] });

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

function post(address: string, headers: Record<string, string>, body = JSON.stringify({ name: KNOB.name, value: '7' }), urlPath = '/api/v1/flags', method = 'POST'): Promise<Reply> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), path: urlPath, method, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} });
      });
    });
    req.on('error', (e) => reject(new Error(`${method} ${JSON.stringify(headers)}: ${e.message}`)));
    req.end(body);
  });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-'));
const servers: WebServer[] = [];
afterEach(async () => {
  for (const w of servers.splice(0)) await w.stop();
});

async function console_(flags: Flags): Promise<WebServer> {
  const w = new WebServer({ kind: 'tserver', host: '127.0.0.1', port: 0, flags, ownHosts: ['ts-1.example.internal'] });
  await w.start();
  servers.push(w);
  return w;
}

function secretFile(name: string, text: string): string {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, text);
  return p;
}

describe('console guard', () => {
  it('guard: loopback names and Host parsing', () => {
    expect(['localhost', '127.0.0.1', '127.9.8.7', '::1', 'a.localhost', '::ffff:127.0.0.1'].every(isLoopbackHost)).toBe(true);
    expect(['evil.example', '10.0.0.1', '128.0.0.1', 'localhost.evil.example'].some(isLoopbackHost)).toBe(false);
    expect(hostOf('[::1]:9000')).toBe('::1');
    expect(hostOf('Ts-1.Example.Internal:9000')).toBe('ts-1.example.internal');
  });

  it('guard: without credentials configured, a same-host JSON POST changes a runtime flag; form posts, foreign Origin and foreign Host get 403 PERMISSION_DENIED and change nothing', async () => {
    const flags = new Flags();
    const w = await console_(flags);
    const port = w.address.split(':')[1]!;
    const ok = await post(w.address, {});
    expect(ok.status).toBe(200);
    expect(flags.get(KNOB)).toBe(7);
    const cases: Array<[string, Record<string, string>]> = [
      ['content_type', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['content_type', { 'content-type': 'text/plain' }],
      ['content_type', { 'content-type': 'multipart/form-data; boundary=x' }],
      ['origin', { origin: 'http://evil.example' }],
      ['origin', { origin: 'null' }],
      ['origin', { origin: `http://127.0.0.1:${Number(port) + 1}` }],
      ['host', { host: `evil.example:${port}` }],
      ['host', { host: `rebind.attacker.example:${port}`, origin: `http://rebind.attacker.example:${port}` }],
    ];
    for (const [reason, headers] of cases) {
      const r = await post(w.address, headers, JSON.stringify({ name: KNOB.name, value: '99' }));
      expect({ headers, status: r.status, code: r.body['code'] }).toEqual({ headers, status: 403, code: ErrorCode.PERMISSION_DENIED });
      expect((r.body['details'] as Record<string, unknown>)['reason']).toBe(reason);
    }
    // Other mutating methods are refused the same way before anything else.
    expect((await post(w.address, { origin: 'http://evil.example' }, '{}', '/api/v1/flags', 'PUT')).status).toBe(403);
    expect((await post(w.address, { origin: 'http://evil.example' }, '{}', '/api/v1/flags', 'DELETE')).status).toBe(403);
    expect(flags.get(KNOB)).toBe(7);
    // The console's own Origin, its own other names, and a JSON type with a charset pass.
    expect((await post(w.address, { origin: `http://${w.address}`, 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
    expect((await post(w.address, { host: `ts-1.example.internal:${port}` })).status).toBe(200);
    expect((await post(w.address, { host: `localhost:${port}` })).status).toBe(200);
  });

  it('guard: with --webserver_token_file, no or a wrong bearer token is 401 UNAUTHENTICATED; the token or the cluster secret (either rotation line) passes', async () => {
    const flags = new Flags();
    flags.setFromString(WEBSERVER_TOKEN_FILE.name, secretFile('token', 'console-token-0123456789\n'));
    flags.setFromString(CLUSTER_SECRET_FILE.name, secretFile('secret', 'new-cluster-secret-0123456789\nold-cluster-secret-0123456789\n'));
    const w = await console_(flags);
    const none = await post(w.address, {});
    expect([none.status, none.body['code'], none.headers['www-authenticate']]).toEqual([401, ErrorCode.UNAUTHENTICATED, 'Bearer realm="tessera console"']);
    const wrong = await post(w.address, { authorization: 'Bearer console-token-0123456780' });
    expect([wrong.status, wrong.body['code']]).toEqual([401, ErrorCode.UNAUTHENTICATED]);
    expect((await post(w.address, { authorization: 'Basic Y29uc29sZQ==' })).status).toBe(401);
    expect(flags.get(KNOB)).toBe(1);
    for (const t of ['console-token-0123456789', 'new-cluster-secret-0123456789', 'old-cluster-secret-0123456789']) {
      expect((await post(w.address, { authorization: `Bearer ${t}` })).status).toBe(200);
    }
    expect(flags.get(KNOB)).toBe(7);
    // Credentials do not lift the cross-site checks.
    expect((await post(w.address, { authorization: 'Bearer console-token-0123456789', 'content-type': 'text/plain' })).status).toBe(403);
    // Reading stays open.
    expect((await post(w.address, {}, '', '/api/v1/varz', 'GET')).status).toBe(200);
  });

  it('guard: a bad token file stops the console from starting with INVALID_ARGUMENT', async () => {
    const flags = new Flags();
    flags.setFromString(WEBSERVER_TOKEN_FILE.name, secretFile('short', 'short\n'));
    await expect(console_(flags)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    flags.setFromString(WEBSERVER_TOKEN_FILE.name, path.join(tmp, 'missing'));
    await expect(console_(flags)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
  });

  it('guard: dangerous TEST_ flags need --enable_test_flags, force needs --allow_unsafe_flag_changes, start-only flags never change at run time', async () => {
    const flags = new Flags();
    const w = await console_(flags);
    const set = (name: string, value: string, force = false): Promise<Reply> => post(w.address, {}, JSON.stringify({ name, value, force }));
    for (const name of [TEST_TRANSACTION_IGNORE_APPLYING_PROBABILITY.name, TEST_FAIL_TABLET_REPLICA.name]) {
      const r = await set(name, name === TEST_FAIL_TABLET_REPLICA.name ? '*' : '1');
      expect([r.status, r.body['code'], (r.body['details'] as Record<string, unknown>)['reason']]).toEqual([403, ErrorCode.PERMISSION_DENIED, 'enable_test_flags']);
    }
    expect(flags.get(TEST_FAIL_TABLET_REPLICA)).toBe('');
    const start = await set(ENABLE_TEST_FLAGS.name, 'true', true);
    expect([start.status, (start.body['details'] as Record<string, unknown>)['reason']]).toEqual([403, 'start_only']);
    expect((await set(ALLOW_UNSAFE_FLAG_CHANGES.name, 'true', true)).status).toBe(403);
    expect((await set(CLUSTER_SECRET_FILE.name, '/x', true)).status).toBe(403);
    // A server started with the switches (a lab's) takes them.
    flags.setFromString(ENABLE_TEST_FLAGS.name, 'true');
    expect((await set(TEST_FAIL_TABLET_REPLICA.name, 'tablet-x')).status).toBe(200);
    expect(flags.get(TEST_FAIL_TABLET_REPLICA)).toBe('tablet-x');
  });
});
