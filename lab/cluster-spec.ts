/**
 * What a lab cluster is made of (docs/architecture.md §Lab, issue 7). A node is one tserver plus, on the first 1 or 3
 * nodes, a master — the same shape yugabyted gives. Flags are kept as text (`name -> value`) because
 * they are passed on to server command lines, where the servers' own registries validate them.
 */
import * as path from 'node:path';
import { DbError, ErrorCode, parseFlagList } from '../common';

export type DriverKind = 'process' | 'docker';
export type ServerRole = 'master' | 'tserver';
export type FlagMap = Record<string, string>;

/** Nodes are named n0, n1, ... in the order they are created. */
export type NodeName = string;

/** Hard limit on nodes per lab: port schemes below add the node index to a base port. */
export const LAB_NODES_MAX = 50;

export interface ClusterSpec {
  nodes: number;
  masters: 1 | 3;
  /** Flags for every tserver / every master. */
  tserverFlags: FlagMap;
  masterFlags: FlagMap;
  /** Extra flags for one node's tserver (`--node-flags n0:TEST_x=1`). */
  nodeFlags: Record<NodeName, FlagMap>;
  /** Extra flags for one node's master (`--node-flags n0/master:TEST_x=1`). */
  nodeMasterFlags: Record<NodeName, FlagMap>;
  /** Directory holding lab.json, node data and logs. */
  baseDir: string;
  driver: DriverKind;
  /**
   * Script the servers run, relative to the package root (the folder holding package.json):
   * `dist/cli/main.js` for the real servers, `dist/lab/fixtures/fake-node.js` for the test stand-in.
   */
  serverEntry: string;
  /** Bound on the wait for every node to answer /api/v1/healthz after up/start/restart. */
  healthTimeoutMs: number;
  /**
   * Process driver: last octet of node 0's loopback address (node i gets 127.0.0.(hostBase+i)); tests
   * pick a high value so they never meet a lab a person runs on 127.0.0.1.
   * Docker driver: unused.
   */
  hostBase: number;
  /**
   * Added to the standard ports. Process driver (only where 127.0.0.x aliases are unavailable): node i
   * uses 7100+offset+i etc. Docker driver: console/RPC ports published on 127.0.0.1 as
   * 7000+offset+i (master web), 9000+offset+i (tserver web), 7100+offset+i, 9100+offset+i.
   */
  portOffset: number;
  /** Docker driver: build the image from this base image instead of FROM scratch (needs a registry). */
  baseImage?: string;
}

export const DEFAULT_SERVER_ENTRY = 'dist/cli/main.js';
export const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;
export const DEFAULT_DOCKER_PORT_OFFSET = 10_000;

export function defaultSpec(over: Partial<ClusterSpec> & { baseDir: string }): ClusterSpec {
  const driver = over.driver ?? 'process';
  const spec: ClusterSpec = {
    nodes: 3,
    masters: 1,
    tserverFlags: {},
    masterFlags: {},
    nodeFlags: {},
    nodeMasterFlags: {},
    driver,
    serverEntry: DEFAULT_SERVER_ENTRY,
    healthTimeoutMs: DEFAULT_HEALTH_TIMEOUT_MS,
    hostBase: 1,
    portOffset: driver === 'docker' ? DEFAULT_DOCKER_PORT_OFFSET : 0,
    ...over,
  };
  spec.baseDir = path.resolve(spec.baseDir);
  validateSpec(spec);
  return spec;
}

export function nodeName(i: number): NodeName {
  return `n${i}`;
}

export function nodeIndex(name: string, nodes: number): number {
  const m = /^n(\d+)$/.exec(name);
  const i = m ? Number(m[1]) : -1;
  if (i < 0 || i >= nodes) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown node '${name}': this lab has n0..n${nodes - 1}`, { node: name });
  }
  return i;
}

function invalid(msg: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg);
}

export function validateSpec(spec: ClusterSpec): void {
  if (!Number.isInteger(spec.nodes) || spec.nodes < 1 || spec.nodes > LAB_NODES_MAX) throw invalid(`--nodes must be 1..${LAB_NODES_MAX}, got ${spec.nodes}`);
  if (spec.masters !== 1 && spec.masters !== 3) throw invalid(`--masters must be 1 or 3, got ${String(spec.masters)}`);
  if (spec.masters > spec.nodes) throw invalid(`--masters ${spec.masters} needs at least ${spec.masters} nodes, got ${spec.nodes}`);
  if (spec.driver !== 'process' && spec.driver !== 'docker') throw invalid(`--driver must be process or docker, got ${String(spec.driver)}`);
  if (!Number.isInteger(spec.hostBase) || spec.hostBase < 1 || spec.hostBase + spec.nodes > 255) throw invalid(`host base ${spec.hostBase} leaves no room for ${spec.nodes} nodes in 127.0.0.x`);
  if (!Number.isInteger(spec.portOffset) || spec.portOffset < 0 || 9100 + spec.portOffset + spec.nodes > 65535) throw invalid(`port offset ${spec.portOffset} is out of range`);
  for (const n of [...Object.keys(spec.nodeFlags), ...Object.keys(spec.nodeMasterFlags)]) nodeIndex(n, spec.nodes);
  for (const n of Object.keys(spec.nodeMasterFlags)) {
    if (nodeIndex(n, spec.nodes) >= spec.masters) throw invalid(`--node-flags ${n}/master: node ${n} runs no master`);
  }
}

/** `"a=1,b=2"` as a FlagMap (values with commas in braces, as parseFlagList allows). */
export function flagMapFromList(list: string | undefined): FlagMap {
  const out: FlagMap = {};
  if (!list) return out;
  for (const [k, v] of parseFlagList(list)) out[k] = v;
  return out;
}

/**
 * `--node-flags n0:TEST_x=1,n1:TEST_y=2,n0/master:TEST_z=3`: `NODE:` targets the node's tserver,
 * `NODE/master:` its master.
 */
export function parseNodeFlags(list: string | undefined): { tserver: Record<NodeName, FlagMap>; master: Record<NodeName, FlagMap> } {
  const tserver: Record<NodeName, FlagMap> = {};
  const master: Record<NodeName, FlagMap> = {};
  if (!list) return { tserver, master };
  for (const [key, value] of parseFlagList(list)) {
    const m = /^(n\d+)(\/master|\/tserver)?:([A-Za-z0-9_]+)$/.exec(key);
    if (!m) throw invalid(`--node-flags entry '${key}=${value}' must look like n0:FLAG=VALUE or n0/master:FLAG=VALUE`);
    const target = m[2] === '/master' ? master : tserver;
    const node = m[1]!;
    target[node] = { ...(target[node] ?? {}), [m[3]!]: value };
  }
  return { tserver, master };
}

export function flagArgs(flags: FlagMap): string[] {
  return Object.entries(flags).map(([k, v]) => `--${k}=${v}`);
}
