/**
 * `npm run bench:rpc`: RPC round trips per second on loopback over WsTransport (issue 2, "Tests and
 * figures"). One server, one client, one connection; the Echo method carries `bytes data` of the given
 * size through the protobuf codecs both ways. Each case keeps N calls in flight (a new call starts when
 * one ends) for a fixed time and reports calls/s and latency percentiles.
 *
 * Then what a connection costs with the cluster secret's challenge and with TLS (docs/security.md):
 * new connections each making one call, for the same time, plain, with a secret, and with a secret
 * over TLS (certificates made with openssl in a temporary directory), as ratios to plain.
 *
 * Options: --seconds=N per case (default 3); --cluster_secret: the steady-state cases on a secured
 * server and client too; --tls: and over TLS.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createCa, createNodeCert } from '../lab/tls-certs';
import { clientTlsOf, defineMethod, parseSecrets, serverTlsOf, WsTransport, type ClusterSecrets } from '../rpc';

interface EchoMsg {
  data?: Uint8Array;
}

const ECHO = defineMethod<EchoMsg, EchoMsg>('BenchService', 'Echo', 'EchoPB', 'EchoPB');
const INFLIGHT = [1, 64];
const PAYLOAD_BYTES = [100, 4096];
/** Latency samples kept per case (every call below this, then none): bounds memory. */
const SAMPLES_MAX = 2_000_000;
const WARMUP_CALLS = 2000;

function argSeconds(): number {
  const a = process.argv.find((x) => x.startsWith('--seconds='));
  const v = a ? Number(a.slice('--seconds='.length)) : 3;
  return Number.isFinite(v) && v > 0 ? Math.min(v, 600) : 3;
}

function pct(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function runCase(call: () => Promise<unknown>, inflight: number, durationMs: number): Promise<{ calls: number; perSec: number; p50: number; p99: number; max: number }> {
  const samples = new Float64Array(SAMPLES_MAX);
  let n = 0;
  let calls = 0;
  const end = performance.now() + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await call();
      const dt = performance.now() - t0;
      if (n < SAMPLES_MAX) samples[n++] = dt;
      calls++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inflight }, worker));
  const elapsed = performance.now() - start;
  const s = samples.subarray(0, n).sort();
  return { calls, perSec: (calls / elapsed) * 1000, p50: pct(s, 50), p99: pct(s, 99), max: s.length ? s[s.length - 1]! : 0 };
}

const BENCH_SECRET = 'bench-cluster-secret-0123456789abcdef';
/** Bound on the connect case's connections (each is opened, used once and closed). */
const CONNECTS_MAX = 1_000_000;

interface BenchTls {
  dir: string;
}

/** A CA and a certificate for 127.0.0.1 in a temporary directory. */
function benchCerts(): BenchTls {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-tls-'));
  createCa(dir);
  createNodeCert(dir, '127.0.0.1');
  return { dir };
}

function benchTransport(secrets: ClusterSecrets, tls: BenchTls | undefined): WsTransport {
  return new WsTransport({ clusterSecrets: secrets, ...(tls ? { clientTls: clientTlsOf(tls.dir), serverTls: serverTlsOf(tls.dir, '127.0.0.1') } : {}) });
}

/** New connections per second, each making one call and closing, for `seconds`. */
async function connectsPerSec(secrets: ClusterSecrets, seconds: number, tls?: BenchTls): Promise<{ connects: number; perSec: number }> {
  const transport = benchTransport(secrets, tls);
  const server = transport.createServer({ host: '127.0.0.1', port: 0 });
  server.handle(ECHO, async (req) => req);
  await server.start();
  const req = { data: new Uint8Array(100) };
  let connects = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end && connects < CONNECTS_MAX) {
    const client = benchTransport(secrets, tls).createClient();
    await client.call(server.address, ECHO, req, { timeoutMs: 10_000 });
    await client.close();
    connects++;
  }
  const elapsed = performance.now() - start;
  await server.stop();
  return { connects, perSec: (connects / elapsed) * 1000 };
}

async function main(): Promise<void> {
  const seconds = argSeconds();
  const useTls = process.argv.includes('--tls');
  const secured = useTls || process.argv.includes('--cluster_secret');
  const certs = benchCerts();
  const transport = benchTransport(secured ? parseSecrets(BENCH_SECRET, 'bench') : [], useTls ? certs : undefined);
  const server = transport.createServer({ host: '127.0.0.1', port: 0 });
  server.handle(ECHO, async (req) => req);
  await server.start();
  const client = transport.createClient();
  const addr = server.address;
  process.stdout.write(`RPC loopback benchmark: WsTransport${secured ? ' with a cluster secret' : ''}${useTls ? ' over TLS' : ''}, ${seconds} s per case, server ${addr}, node ${process.version}\n\n`);
  const rows: string[][] = [['in flight', 'payload B', 'calls', 'calls/s', 'p50 ms', 'p99 ms', 'max ms']];
  for (const size of PAYLOAD_BYTES) {
    const req = { data: new Uint8Array(size).fill(7) };
    const call = (): Promise<unknown> => client.call(addr, ECHO, req, { timeoutMs: 10_000 });
    for (let i = 0; i < WARMUP_CALLS; i++) await call();
    for (const inflight of INFLIGHT) {
      const r = await runCase(call, inflight, seconds * 1000);
      rows.push([String(inflight), String(size), String(r.calls), r.perSec.toFixed(0), r.p50.toFixed(3), r.p99.toFixed(3), r.max.toFixed(2)]);
    }
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) process.stdout.write(r.map((cell, c) => cell.padStart(widths[c]!)).join('  ') + '\n');
  await client.close();
  await server.stop();
  const secret = parseSecrets(BENCH_SECRET, 'bench');
  const plain = await connectsPerSec([], seconds);
  const withSecret = await connectsPerSec(secret, seconds);
  const withTls = await connectsPerSec(secret, seconds, certs);
  fs.rmSync(certs.dir, { recursive: true, force: true });
  const ratio = (x: number): string => `${(x / plain.perSec).toFixed(2)}×`;
  process.stdout.write(
    `\nnew connection + one call: ${plain.perSec.toFixed(0)}/s plain, ${withSecret.perSec.toFixed(0)}/s with the HMAC challenge (${ratio(withSecret.perSec)}), ` +
      `${withTls.perSec.toFixed(0)}/s with the challenge over TLS (${ratio(withTls.perSec)})\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:rpc failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});
