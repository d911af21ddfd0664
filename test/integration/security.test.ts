/**
 * Security on real processes (docs/security.md), host bases 170-184: a cluster whose servers run with
 * a cluster secret, a console token on the tservers, and without the lab's --enable_test_flags /
 * --allow_unsafe_flag_changes. Every console mutation with no, wrong and right credentials and in
 * CSRF shapes; the dangerous TEST_ flags and forced changes refused (console and SetFlag RPC); a
 * client and a tserver without the secret kept out; a half-sent request, a lying Content-Length and
 * a truncated frame closed; random handshakes never take a server down; a server that would listen
 * beyond loopback without a secret does not start; a master with TLS serves wss and https. Then a process lab with a console token: the lab
 * passes its token and its servers take the dangerous TEST_ flags.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { TesseraClient } from '../../client/tessera-client';
import { DbError, ErrorCode } from '../../common/errors';
import { defaultSpec, getJson, ProcessDriver } from '../../lab';
import { postFlag } from '../../lab/console-http';
import { createCa, createNodeCert } from '../../lab/tls-certs';
import { tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster, waitFor, type Proc } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const HOST_BASE = 170;
const HAVE_OPENSSL = spawnSync('openssl', ['version']).status === 0;
const LAB_HOST_BASE = 180;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-sec-'));
const SECRET = 'cluster-secret-for-the-security-test-0123';
const TOKEN = 'console-token-for-the-security-test-0123';
const secretFile = path.join(tmp, 'cluster-secret');
const tokenFile = path.join(tmp, 'console-token');
fs.writeFileSync(secretFile, `${SECRET}\n`);
fs.writeFileSync(tokenFile, `${TOKEN}\n`);

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;
let rogue: Proc | undefined;
let labDir: string | undefined;
let tlsMaster: ChildProcess | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  if (rogue?.child && rogue.child.exitCode === null) rogue.child.kill('SIGKILL');
  if (tlsMaster && tlsMaster.exitCode === null) tlsMaster.kill('SIGKILL');
  await cluster?.destroy();
  if (labDir) await ProcessDriver.open(labDir).down().catch(() => undefined);
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return e instanceof DbError ? e.code : `not a DbError: ${String(e)}`;
  }
}

interface Reply {
  status: number;
  code: unknown;
}

/** POST a flag change to a console with exactly these headers (Host included when given). */
function postRaw(webAddress: string, headers: Record<string, string>, body: unknown): Promise<Reply> {
  const data = JSON.stringify(body);
  const i = webAddress.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const req = http.request({ host: webAddress.slice(0, i), port: Number(webAddress.slice(i + 1)), path: '/api/v1/flags', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let code: unknown;
        try {
          code = (JSON.parse(text) as { code?: unknown }).code;
        } catch {
          code = undefined;
        }
        resolve({ status: res.statusCode ?? 0, code });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Write raw bytes to host:port; what came back once the server closed (or this side gave up after `giveUpMs`). */
function rawExchange(address: string, chunks: Array<string | Buffer>, giveUpMs = 20_000): Promise<{ reply: string; closedByServer: boolean }> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    let byUs = false;
    const s = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) }, () => {
      for (const c of chunks) s.write(c);
    });
    const t = setTimeout(() => ((byUs = true), s.destroy()), giveUpMs);
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(t);
      resolve({ reply: Buffer.concat(got).toString('latin1'), closedByServer: !byUs });
    });
  });
}

/** A WebSocket upgrade request to an RPC port, whole. */
function upgradeRequest(address: string): string {
  return `GET /rpc HTTP/1.1\r\nHost: ${address}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
}

const statusLine = (reply: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0);

describe('security on real processes', () => {
  describe('a secured cluster (secret, tserver console token, no lab switches)', () => {
    beforeAll(async () => {
      // The lab's switches turned off again (a later flag wins): this cluster runs as production would.
      const off = ['--enable_test_flags=false', '--allow_unsafe_flag_changes=false', `--cluster_secret_file=${secretFile}`, '--webserver_request_timeout_ms=1000', '--rpc_frame_timeout_ms=1000', '--rpc_handshake_timeout_ms=1000'];
      cluster = await ProcCluster.create({ hostBase: HOST_BASE, masters: 1, tservers: 3, masterFlags: off, tserverFlags: [...off, `--webserver_token_file=${tokenFile}`, '--heartbeat_interval_ms=200'] });
      await cluster.startAll();
      client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, clusterSecretFile: secretFile, timeoutMs: 20_000 });
      await client.createTable({ name: 'sec', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1 });
      await client.table('sec').upsert({ id: 1n, v: 'one' });
    }, 120_000);

    it('security: a client with the secret is served; without it, or with another one, UNAUTHENTICATED', async () => {
      expect(await client!.table('sec').get({ id: 1n })).toEqual({ id: 1n, v: 'one' });
      expect(await codeOf(TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, timeoutMs: 3_000 }))).toBe(ErrorCode.UNAUTHENTICATED);
      expect(await codeOf(TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, clusterSecret: 'another-secret-0123456789abcdef', timeoutMs: 3_000 }))).toBe(ErrorCode.UNAUTHENTICATED);
    });

    it('security: console mutations with no, wrong and right credentials, and CSRF-shaped ones (form, foreign Origin, foreign Host)', async () => {
      const change = { name: 'log_level', value: 'info' };
      // The tserver takes its token or the secret; the master (no token) the secret.
      for (const [who, web, good] of [['master', cluster!.masters[0]!.webAddress, [SECRET]], ['tserver', cluster!.tservers[0]!.webAddress, [TOKEN, SECRET]]] as const) {
        expect({ who, r: await postRaw(web, {}, change) }).toEqual({ who, r: { status: 401, code: ErrorCode.UNAUTHENTICATED } });
        expect({ who, r: await postRaw(web, { authorization: 'Bearer not-the-token-0123456789' }, change) }).toEqual({ who, r: { status: 401, code: ErrorCode.UNAUTHENTICATED } });
        for (const t of good) expect({ who, r: await postRaw(web, { authorization: `Bearer ${t}` }, change) }).toEqual({ who, r: { status: 200, code: undefined } });
        // Refused even with credentials.
        const auth = { authorization: `Bearer ${good[0]}` };
        expect(await postRaw(web, { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, change)).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
        expect(await postRaw(web, { ...auth, origin: 'http://evil.example' }, change)).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
        expect(await postRaw(web, { ...auth, host: `rebind.evil.example:${web.split(':')[1]}` }, change)).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
      }
    });

    it('security: without --enable_test_flags / --allow_unsafe_flag_changes, data-losing TEST_ flags and force are refused on the console and the SetFlag RPC', async () => {
      for (const [web, token] of [[cluster!.masters[0]!.webAddress, SECRET], [cluster!.tservers[0]!.webAddress, TOKEN]] as const) {
        const auth = { authorization: `Bearer ${token}` };
        expect(await postRaw(web, auth, { name: 'TEST_transaction_ignore_applying_probability', value: '1' })).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
        expect(await postRaw(web, auth, { name: 'TEST_fail_tablet_replica', value: '*' })).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
        expect(await postRaw(web, auth, { name: 'rpc_max_message_size', value: '2048', force: true })).toEqual({ status: 403, code: ErrorCode.PERMISSION_DENIED });
      }
      const ts = cluster!.tservers[0]!;
      const rpc = client!.rpcClient();
      expect(await codeOf(rpc.call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: '*' }, { timeoutMs: 3_000 }))).toBe(ErrorCode.PERMISSION_DENIED);
      expect(await codeOf(rpc.call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'rpc_max_message_size', value: '2048', force: true }, { timeoutMs: 3_000 }))).toBe(ErrorCode.PERMISSION_DENIED);
      const varz = (await getJson(`http://${ts.webAddress}/api/v1/varz`)) as { flags: Array<{ name: string; value: unknown }> };
      expect(varz.flags.find((f) => f.name === 'TEST_fail_tablet_replica')?.value).toBe('');
    });

    it('security: a half-sent request, a lying Content-Length, a half-sent upgrade and a truncated frame are answered 408 or closed', async () => {
      const master = cluster!.masters[0]!;
      const ts = cluster!.tservers[0]!;
      const half = await rawExchange(ts.webAddress, [`POST /api/v1/flags HTTP/1.1\r\nHost: ${ts.webAddress}\r\nContent-Ty`]);
      expect(half.closedByServer).toBe(true);
      expect([0, 408]).toContain(statusLine(half.reply));
      // (With the credentials: else the console refuses it before reading the body.)
      const lying = await rawExchange(master.webAddress, [`POST /api/v1/flags HTTP/1.1\r\nHost: ${master.webAddress}\r\nAuthorization: Bearer ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"name":"log_level"`]);
      expect(lying.closedByServer).toBe(true);
      expect(statusLine(lying.reply)).toBe(408);
      const halfUpgrade = await rawExchange(ts.rpcAddress, [upgradeRequest(ts.rpcAddress).slice(0, 40)]);
      expect(halfUpgrade.closedByServer).toBe(true);
      const truncated = await rawExchange(ts.rpcAddress, [upgradeRequest(ts.rpcAddress), Buffer.from([0x82, 0x80 | 100, 0, 0, 0, 0, 1, 2, 3])]);
      expect(truncated.closedByServer).toBe(true);
      expect(statusLine(truncated.reply)).toBe(101);
    });

    it('security: a fuzzed handshake never takes a server down; a raw call without the answer is closed 4401', async () => {
      const master = cluster!.masters[0]!;
      await fc.assert(
        fc.asyncProperty(fc.boolean(), fc.uint8Array({ minLength: 1, maxLength: 1_000 }), async (afterUpgrade, bytes) => {
          await rawExchange(master.rpcAddress, afterUpgrade ? [upgradeRequest(master.rpcAddress), Buffer.from(bytes)] : [Buffer.from(bytes)], 3_000);
        }),
        { numRuns: 20 },
      );
      const wsRaw = new WebSocket(`ws://${master.rpcAddress}/rpc`);
      const wsClosed = new Promise<number>((resolve) => wsRaw.on('close', (code) => resolve(code)));
      wsRaw.on('error', () => undefined);
      await new Promise<void>((resolve) => wsRaw.once('open', () => resolve()));
      wsRaw.send(Buffer.from([0x01, 0x02, 0x03]), { binary: true });
      expect(await wsClosed).toBe(4401);
      expect(cluster!.isRunning(master)).toBe(true);
      expect(await client!.table('sec').get({ id: 1n })).toEqual({ id: 1n, v: 'one' });
    });

    it('security: a tserver without the secret cannot join: the master closes its connections and never lists it', async () => {
      const cl = cluster!;
      const master = cl.masters[0]!;
      const aliases = master.rpcAddress.startsWith(`127.0.0.${HOST_BASE}:`);
      const host = aliases ? `127.0.0.${HOST_BASE + 3}` : '127.0.0.1';
      const port = (base: number): number => base + (aliases ? 0 : HOST_BASE * 10 + 3);
      const dataDir = path.join(tmp, 'rogue');
      rogue = { role: 'tserver', index: 3, rpcAddress: `${host}:${port(9100)}`, webAddress: `${host}:${port(9000)}`, dataDir, logFile: path.join(tmp, 'rogue.log'), argv: ['tserver', `--tserver_master_addrs=${cl.masterAddresses.join(',')}`, `--rpc_bind_addresses=${host}:${port(9100)}`, `--webserver_port=${port(9000)}`, `--fs_data_dirs=${dataDir}`, '--heartbeat_interval_ms=200'] };
      const before = await refusedUnauthenticated(master.webAddress);
      cl.start(rogue);
      await waitFor('the master to refuse the tserver without the secret', 30_000, async () => (await refusedUnauthenticated(master.webAddress)) > before + 1);
      expect(fs.readFileSync(rogue.logFile, 'utf8')).toContain('UNAUTHENTICATED');
      expect((await cl.tabletServers()).map((t) => t.rpcAddress)).not.toContain(rogue.rpcAddress);
    });
  });

  it('security: a server that would listen beyond loopback without a cluster secret exits 1 with a one-line error', () => {
    const dataDir = path.join(tmp, 'open');
    // Refused before anything listens (no traffic leaves loopback).
    const r = spawnSync(process.execPath, [CLI, 'tserver', '--rpc_bind_addresses=0.0.0.0:0', '--webserver_port=0', `--fs_data_dirs=${dataDir}`, '--tserver_master_addrs=127.0.0.1:1'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: INVALID_ARGUMENT: .*--cluster_secret_file/);
  });

  it('security: a SQL endpoint beyond loopback without --ysql_password is refused (trust authentication is for loopback only); the tserver exits 1 with a one-line error', () => {
    const dataDir = path.join(tmp, 'open-sql');
    const host = `127.0.0.${HOST_BASE + 6}`;
    // The tserver's own listeners are on loopback and start; the SQL endpoint is refused before it listens.
    const r = spawnSync(process.execPath, [CLI, 'tserver', `--rpc_bind_addresses=${host}:0`, '--webserver_port=0', `--fs_data_dirs=${dataDir}`, '--tserver_master_addrs=127.0.0.1:1', '--pgsql_proxy_bind_address=0.0.0.0:0'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: INVALID_ARGUMENT: SQL address 0\.0\.0\.0:0 is not loopback: .*--ysql_password/);
  });

  it.skipIf(!HAVE_OPENSSL)('security: a master with --certs_dir serves wss and https; a client with the CA and the secret connects, one without the CA does not (skipped without the openssl command)', async () => {
    const host = `127.0.0.${HOST_BASE + 5}`;
    const certs = path.join(tmp, 'certs');
    createCa(certs);
    createNodeCert(certs, host);
    const dataDir = path.join(tmp, 'tls-master');
    tlsMaster = spawn(process.execPath, [CLI, 'master', `--master_addresses=${host}:7100`, `--rpc_bind_addresses=${host}:7100`, '--webserver_port=7000', `--fs_data_dirs=${dataDir}`, `--certs_dir=${certs}`, `--cluster_secret_file=${secretFile}`], { stdio: 'ignore' });
    const ca = fs.readFileSync(path.join(certs, 'ca.crt'));
    const healthz = (): Promise<number> =>
      new Promise((resolve, reject) => {
        https.get(`https://${host}:7000/api/v1/healthz`, { ca, agent: false }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', reject);
      });
    expect(await waitFor('the TLS master console', 30_000, async () => (await healthz()) === 200)).toBe(true);
    const c = await TesseraClient.connect({ masterAddresses: [`${host}:7100`], clusterSecretFile: secretFile, certsDir: certs, timeoutMs: 20_000 });
    // A round trip over wss, authenticated: listTables answers (whatever tables there are).
    expect(Array.isArray(await c.listTables())).toBe(true);
    await c.close();
    expect(await codeOf(TesseraClient.connect({ masterAddresses: [`${host}:7100`], clusterSecretFile: secretFile, timeoutMs: 3_000 }))).not.toBe('OK');
    // An operator's flag change over https: the CA verifies the console, the secret is the bearer token.
    const env = { ...process.env, TESSERA_CLUSTER_SECRET_FILE: secretFile };
    const ok = spawnSync(process.execPath, [CLI, 'admin', '--certs_dir', certs, 'set_flag', `https://${host}:7000`, 'log_level', 'info'], { encoding: 'utf8', env, timeout: 30_000 });
    expect([ok.status, ok.stderr]).toEqual([0, '']);
    const noCa = spawnSync(process.execPath, [CLI, 'admin', 'set_flag', `https://${host}:7000`, 'log_level', 'info'], { encoding: 'utf8', env: { ...env, TESSERA_CERTS_DIR: '' }, timeout: 30_000 });
    expect(noCa.status).toBe(1);
  });

  it('security: a process lab with a console token passes it, and its servers take the dangerous TEST_ flags (--enable_test_flags)', async () => {
    labDir = path.join(tmp, 'lab');
    const driver = new ProcessDriver();
    await driver.up(defaultSpec({ baseDir: labDir, nodes: 1, masters: 1, serverEntry: 'dist/cli/main.js', hostBase: LAB_HOST_BASE, portOffset: 0, healthTimeoutMs: 60_000, tserverFlags: { webserver_token_file: tokenFile }, masterFlags: { webserver_token_file: tokenFile } }));
    const web = driver.addresses()[0]!.tserver.webUrl;
    expect(await codeOf(postFlag(web, 'TEST_fail_tablet_replica', 'no-such-tablet', false))).toBe(ErrorCode.UNAUTHENTICATED);
    const res = await driver.setFlag('n0', 'TEST_fail_tablet_replica', 'no-such-tablet', false, 'tserver');
    expect(res).toEqual([{ node: 'n0', role: 'tserver', ok: true, value: { name: 'TEST_fail_tablet_replica', value: 'no-such-tablet' } }]);
    await driver.setFlag('n0', 'TEST_fail_tablet_replica', '', false, 'tserver');
  });
});

/** The master's count of RPC connections it closed for want of the cluster secret (/prometheus-metrics). */
async function refusedUnauthenticated(webAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(`http://${webAddress}/prometheus-metrics`, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve(Number(/^rpc_connections\{[^}]*kind="closed_unauthenticated"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0)));
      })
      .on('error', reject);
  });
}

