/** Output helpers shared by the commands: aligned tables for people, JSON (--json) for scripts. */
import { CLUSTER_SECRET_ENV } from '../rpc';
import { formatTable } from '../lab/text-table';
import { toJson } from '../rpc';
import { TesseraClient } from '../client/tessera-client';
import { labConnectOptions } from '../lab/cluster-driver';
import { readLabState } from '../lab/lab-state';
import { DbError, ErrorCode } from '../common/errors';
import { defaultBaseDir, pidAlive, readState } from './local-cluster';

/**
 * Where commands connect without --master_addresses: $TESSERA_MASTER_ADDRESSES; else the masters of
 * the local cluster `tessera start` runs from the default base directory (its cluster.json), while
 * one of its processes is alive — whatever --host_base or port offset it was started with; else
 * 127.0.0.1:7100.
 */
export function defaultMasterAddresses(env: NodeJS.ProcessEnv = process.env, baseDir: string = defaultBaseDir()): string {
  const fromEnv = env['TESSERA_MASTER_ADDRESSES'];
  if (fromEnv) return fromEnv;
  let st;
  try {
    st = readState(baseDir);
  } catch {
    st = undefined; // unreadable state: not ours to judge here (tessera status says why)
  }
  if (st && (pidAlive(st.supervisorPid) || st.servers.some((s) => s.role === 'master' && pidAlive(s.pid)))) return st.masterAddresses;
  return '127.0.0.1:7100';
}

export const DEFAULT_MASTER_ADDRESSES = defaultMasterAddresses();

export function print(line: string): void {
  process.stdout.write(line + '\n');
}

export function printJson(v: unknown): void {
  print(toJson(v, 2));
}

/** Cells wider than this are cut in tables for people (`--full` shows them whole; JSON always does). */
export const CELL_CHARS_SHOWN = 60;

/**
 * A value as a table shows it. With `maxChars`, a longer one is cut and says its full length
 * (`abc…(1048576 chars)`; bytes count their hex digits), so a 1 MiB value does not flood the terminal.
 */
export function cellText(v: unknown, maxChars?: number): string {
  let s: string;
  if (v === null || v === undefined) s = 'null';
  else if (v instanceof Uint8Array) s = '0x' + Buffer.from(v).toString('hex');
  else s = String(v);
  if (maxChars === undefined || s.length <= maxChars) return s;
  return `${s.slice(0, maxChars)}…(${s.length} chars)`;
}

export function printTable(headers: string[], rows: unknown[][], maxChars?: number): void {
  print(formatTable(headers, rows.map((r) => r.map((v) => cellText(v, maxChars)))));
}

/**
 * A closed pipe (`tessera scan t | head`) ends the command quietly with status 0, as other Unix
 * tools do, instead of an EPIPE stack trace.
 */
export function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream = process.stdout): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

/** Where a command connects: --master_addresses, or --lab_dir (a `tessera lab` cluster, whichever its driver). */
export interface ClientTarget {
  master_addresses: string;
  lab_dir?: string;
  cluster_secret_file?: string;
  certs_dir?: string;
}

export const CERTS_DIR_HELP = "a TLS cluster's certificates directory: its ca.crt verifies the servers (default $TESSERA_CERTS_DIR)";

export const CLUSTER_SECRET_HELP = `a secured cluster's secret file (default $TESSERA_CLUSTER_SECRET_FILE; docs/security.md)`;

export const LAB_DIR_HELP = 'talk to the lab started with tessera lab up --base_dir DIR (its masters; a docker lab through its published ports); overrides --master_addresses';

/**
 * Connect options for a target. A lab's servers advertise the addresses they use among themselves
 * (a docker lab: n1:9100); lab.json knows the published ports this machine reaches them at.
 */
export function connectTarget(t: string | ClientTarget): { masterAddresses: string[]; addressMap?: Record<string, string>; clusterSecretFile?: string; certsDir?: string } {
  const target: ClientTarget = typeof t === 'string' ? { master_addresses: t } : t;
  // A secured cluster's secret: --cluster_secret_file, else $TESSERA_CLUSTER_SECRET_FILE (docs/security.md).
  const secretFile = target.cluster_secret_file ?? process.env[CLUSTER_SECRET_ENV];
  const certsDir = target.certs_dir ?? process.env['TESSERA_CERTS_DIR'];
  const secret = { ...(secretFile ? { clusterSecretFile: secretFile } : {}), ...(certsDir ? { certsDir } : {}) };
  if (!target.lab_dir) return { masterAddresses: target.master_addresses.split(','), ...secret };
  const st = readLabState(target.lab_dir);
  if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no lab in ${target.lab_dir} (no lab.json); start one with tessera lab up --base_dir ${target.lab_dir}`);
  return { ...labConnectOptions(st.nodes), ...secret };
}

export async function withClient<T>(target: string | ClientTarget, timeoutMs: number | undefined, f: (c: TesseraClient) => Promise<T>): Promise<T> {
  const client = await TesseraClient.connect({ ...connectTarget(target), ...(timeoutMs ? { timeoutMs } : {}) });
  try {
    return await f(client);
  } finally {
    await client.close();
  }
}
