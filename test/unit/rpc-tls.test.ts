/**
 * TLS from --certs_dir (rpc/tls.ts, cli/cert-commands.ts, docs/security.md), in process, with
 * certificates `tessera cert` makes through openssl: wss with the CA and the dialled host verified,
 * together with the cluster secret; plain ws, another CA and a certificate naming another host
 * refused; the console over https.
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode, Flags } from '../../common';
import { createCa, createNodeCert } from '../../lab/tls-certs';
import { parseSecrets } from '../../rpc/cluster-secret';
import { CERT_NODE_FILENAME, CERTS_DIR, clientTlsOf } from '../../rpc/tls';
import type { RpcClient } from '../../rpc/types';
import { WebServer } from '../../rpc/web-server';
import { WsTransport } from '../../rpc/ws-transport';
import { ECHO, startEchoServer, type EchoServer } from './rpc-transport-compliance';

const HAVE_OPENSSL = spawnSync('openssl', ['version']).status === 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tls-'));
const certs = path.join(tmp, 'certs');
const otherCa = path.join(tmp, 'other');
const SECRETS = parseSecrets('tls-test-secret-0123456789abcdef', 'test');

const servers: EchoServer[] = [];
const clients: RpcClient[] = [];
const webs: WebServer[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of servers.splice(0)) await s.server.stop();
  for (const w of webs.splice(0)) await w.stop();
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

beforeAll(() => {
  if (!HAVE_OPENSSL) return;
  createCa(certs);
  createNodeCert(certs, '127.0.0.1', ['localhost']);
  createNodeCert(certs, 'elsewhere.example');
  createCa(otherCa);
});

async function tlsServer(more: Record<string, string> = {}): Promise<EchoServer> {
  const flags = new Flags();
  flags.setFromString(CERTS_DIR.name, certs);
  for (const [k, v] of Object.entries(more)) flags.setFromString(k, v);
  const es = await startEchoServer(new WsTransport({ flags, clusterSecrets: SECRETS }), '127.0.0.1');
  servers.push(es);
  return es;
}

function client(caDir: string | undefined): RpcClient {
  const c = new WsTransport({ clusterSecrets: SECRETS, ...(caDir ? { clientTls: clientTlsOf(caDir) } : {}) }).createClient();
  clients.push(c);
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return e instanceof DbError ? e.code : `not a DbError: ${String(e)}`;
  }
}

describe.skipIf(!HAVE_OPENSSL)('TLS (skipped: no openssl command on this machine)', () => {
  it('tls: a client with the CA and the secret is served over wss; plain ws, another CA and a certificate naming another host fail to connect', async () => {
    const es = await tlsServer();
    expect((await client(certs).call(es.server.address, ECHO, { text: 'over tls' }, { timeoutMs: 5_000 })).text).toBe('over tls');
    expect(await codeOf(client(undefined).call(es.server.address, ECHO, { text: 'x' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.NETWORK_ERROR);
    expect(await codeOf(client(otherCa).call(es.server.address, ECHO, { text: 'x' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.NETWORK_ERROR);
    const misnamed = await tlsServer({ [CERT_NODE_FILENAME.name]: 'elsewhere.example' });
    expect(await codeOf(client(certs).call(misnamed.server.address, ECHO, { text: 'x' }, { timeoutMs: 5_000 }))).toBe(ErrorCode.NETWORK_ERROR);
    // The server keeps serving after the refused handshakes.
    expect((await client(certs).call(es.server.address, ECHO, { text: 'still' }, { timeoutMs: 5_000 })).text).toBe('still');
  });

  it('tls: the console serves https with the node certificate', async () => {
    const flags = new Flags();
    flags.setFromString(CERTS_DIR.name, certs);
    const w = new WebServer({ kind: 'tserver', host: '127.0.0.1', port: 0, flags });
    await w.start();
    webs.push(w);
    expect(w.scheme).toBe('https');
    const status = await new Promise<number>((resolve, reject) => {
      https.get(`https://${w.address}/api/v1/healthz`, { ca: fs.readFileSync(path.join(certs, 'ca.crt')) }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on('error', reject);
    });
    expect(status).toBe(200);
  });

  it('tls: tessera cert refuses a second CA, a node before a CA, and a name that is not a host', () => {
    expect(() => createCa(certs)).toThrow(expect.objectContaining({ code: ErrorCode.ALREADY_EXISTS }));
    expect(() => createNodeCert(path.join(tmp, 'empty'), 'n1')).toThrow(expect.objectContaining({ code: ErrorCode.NOT_FOUND }));
    expect(() => createNodeCert(certs, '../evil')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });
});
