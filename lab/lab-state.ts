/**
 * BASE/lab.json: everything a later `tessera lab …` invocation needs to find the cluster an earlier
 * `tessera lab up` started (spec, addresses, pids or container ids, partition). Written atomically
 * (temp file + rename) so a crash mid-write never leaves half a file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common';
import type { ClusterSpec, NodeName, ServerRole } from './cluster-spec';
import type { ServerAddresses } from './cluster-driver';
import type { CutLink } from './partition-plan';
import { makeDirs } from '../common/fs-dirs';

export const LAB_STATE_FILE = 'lab.json';
export const LAB_STATE_VERSION = 1;

export interface ServerRecord extends ServerAddresses {
  role: ServerRole;
  /** Arguments after `node ENTRY` (role first), kept so restart uses the same flags. */
  argv: string[];
  dataDir: string;
  /** Process driver: the log file and the last pid started. */
  logFile?: string;
  pid?: number;
}

export interface NodeRecord {
  name: NodeName;
  index: number;
  master?: ServerRecord;
  tserver: ServerRecord;
  /** The node's copy of the lab's cluster secret (docker driver: its servers bind beyond loopback). */
  clusterSecretFile?: string;
  /** Docker driver. */
  containerName?: string;
  containerId?: string;
  ip?: string;
}

export interface DockerRecord {
  /** Short id derived from the base dir; names the network and containers. */
  labId: string;
  networkName: string;
  networkId?: string;
  subnet: string;
  image: string;
  /** The node binary inside the image (for docker exec). */
  nodePath: string;
}

export interface LabState {
  version: number;
  createdAt: string;
  spec: ClusterSpec;
  nodes: NodeRecord[];
  partitioned: NodeName[];
  /** Links cut by a partial partition (`lab partition NODES --from OTHERS`); absent in older files = none. */
  cutLinks?: CutLink[];
  docker?: DockerRecord;
}

export function labStatePath(baseDir: string): string {
  return path.join(baseDir, LAB_STATE_FILE);
}

export function writeLabState(state: LabState): void {
  const file = labStatePath(state.spec.baseDir);
  makeDirs(path.dirname(file), 'lab directory');
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n');
  fs.renameSync(tmp, file);
}

export function readLabState(baseDir: string): LabState | undefined {
  const file = labStatePath(path.resolve(baseDir));
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new DbError(ErrorCode.CORRUPTION, `${file} is not valid JSON: ${(e as Error).message}`);
  }
  return checkLabState(parsed, file);
}

/** Shape check of what we read back: a file from another version or hand-edited fails clearly. */
function checkLabState(v: unknown, file: string): LabState {
  const bad = (what: string): never => {
    throw new DbError(ErrorCode.CORRUPTION, `${file}: ${what}; remove the file if no lab runs there`);
  };
  if (typeof v !== 'object' || v === null) return bad('not an object');
  const o = v as Record<string, unknown>;
  if (o['version'] !== LAB_STATE_VERSION) return bad(`version ${String(o['version'])}, expected ${LAB_STATE_VERSION}`);
  if (typeof o['spec'] !== 'object' || o['spec'] === null) return bad('no spec');
  if (!Array.isArray(o['nodes'])) return bad('no nodes');
  for (const n of o['nodes'] as unknown[]) {
    if (typeof n !== 'object' || n === null) return bad('a node is not an object');
    const nr = n as Record<string, unknown>;
    if (typeof nr['name'] !== 'string' || typeof nr['tserver'] !== 'object') return bad('a node lacks name or tserver');
  }
  if (!Array.isArray(o['partitioned'])) return bad('no partitioned list');
  const links = o['cutLinks'];
  if (links !== undefined && !(Array.isArray(links) && links.every((l) => Array.isArray(l) && l.length === 2 && l.every((x) => typeof x === 'string')))) return bad('cutLinks is not a list of node pairs');
  return v as LabState;
}

export function removeLabState(baseDir: string): void {
  fs.rmSync(labStatePath(baseDir), { force: true });
}

export function serversOf(node: NodeRecord): ServerRecord[] {
  return node.master ? [node.master, node.tserver] : [node.tserver];
}

/** Refuses to start a fresh lab on top of an earlier lab's data (a stale catalog would confuse both). */
export function assertNoOldData(dir: string): void {
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return;
  }
  if (entries.length > 0) {
    throw new DbError(ErrorCode.ALREADY_EXISTS, `${dir} holds data of an earlier lab; run tessera lab down (removes it) or choose another --base_dir`);
  }
}
