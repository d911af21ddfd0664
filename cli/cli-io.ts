/** Output helpers shared by the commands: aligned tables for people, JSON (--json) for scripts. */
import { CLUSTER_SECRET_ENV } from '../rpc';
import { formatTable } from '../lab/text-table';
import { toJson } from '../rpc/json';
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

export function cellText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Uint8Array) return '0x' + Buffer.from(v).toString('hex');
  return String(v);
}

export function printTable(headers: string[], rows: unknown[][]): void {
  print(formatTable(headers, rows.map((r) => r.map(cellText))));
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
