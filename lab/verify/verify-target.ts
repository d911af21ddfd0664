/**
 * What a verification run needs from the cluster it attacks, whichever driver runs it: the servers
 * (1 or 3 masters + N tservers; node i holds tserver i, and master i when i < masters), how a client on this
 * machine reaches them, and the faults the nemesis applies. VerifyCluster runs the servers as child
 * processes; DockerVerifyCluster runs them in a Docker lab of its own. Health and run-time flags go
 * through the same consoles on both (waitVerifyHealthy, setServerFlag).
 */
import { DbError, ErrorCode } from '../../common/errors';
import { tabletServerMethods, type RpcClient } from '../../rpc';
import type { DriverKind } from '../cluster-spec';
import { getJson, isHealthy, postFlag } from '../console-http';
import type { NemesisKind } from './nemesis-schedule';

const HEALTH_POLL_MS = 200;
const SET_FLAG_ATTEMPTS_MAX = 5;

export interface VerifyServerRef {
  role: 'master' | 'tserver';
  /** Node index: a node is a tserver plus (on node 0) the master. */
  node: number;
  name: string;
  /** The address the servers advertise (what table locations and the master report). */
  rpcAddress: string;
  /** Console base URL reachable from this machine. */
  webUrl: string;
  paused: boolean;
  /** The bearer token its console asks for changes (a docker lab's cluster secret), if any. */
  consoleToken?: string | undefined;
}

export interface VerifyConnectOptions {
  masterAddresses: string[];
  /** Advertised address -> the one this machine dials (docker: published ports); absent for processes. */
  addressMap?: Record<string, string>;
  /** The cluster secret file (docker: its servers bind beyond loopback). */
  clusterSecretFile?: string;
  /** A TLS cluster's certificates directory (its ca.crt verifies the servers). */
  certsDir?: string;
}

export interface VerifyTarget<S extends VerifyServerRef = VerifyServerRef> {
  readonly driver: DriverKind;
  readonly servers: readonly S[];
  readonly masters: S[];
  readonly tservers: S[];
  connectOptions(): VerifyConnectOptions;
  startAll(timeoutMs: number): Promise<void>;
  /** Not killed by the nemesis (or started again since); a paused server is running. */
  isRunning(s: S): boolean;
  /** Kill without any shutdown path and wait until the server is gone. */
  kill9(s: S): Promise<void>;
  start(s: S): void | Promise<void>;
  pause(s: S): void | Promise<void>;
  resume(s: S): void | Promise<void>;
  /** The master answers and sees every running tserver alive; every running tserver answers. */
  waitHealthy(timeoutMs: number): Promise<void>;
  setFlag(s: S, name: string, value: string, rpc: RpcClient): Promise<void>;
  /** Cut the listed nodes off from the rest, both ways (empty = heal everything). */
  isolate(nodes: number[], rpc: RpcClient): Promise<void>;
  /**
   * How this driver applies a fault of this kind to these servers, for the fault window's note when
   * it differs from the obvious (e.g. a docker pause stops every server of the container); else undefined.
   */
  faultNote(kind: NemesisKind, servers: readonly S[]): string | undefined;
  /**
   * Undo every fault (resume, start, heal) and wait until healthy: the state for the final read.
   * Returns a problem worth logging that did not stop the cluster from becoming healthy.
   */
  settle(rpc: RpcClient, timeoutMs: number): Promise<string | undefined>;
  /** Stop everything started and remove what was created (data too unless keepData). */
  destroy(keepData: boolean): Promise<void>;
}

export interface HealthWaitOptions {
  /** Consoles of the masters that should be up; the leader's answers the tablet servers' state. */
  masterWebUrls: () => readonly string[];
  /** The tservers that should be up (not the ones the nemesis keeps down). */
  tservers: () => ReadonlyArray<{ rpcAddress: string; webUrl: string }>;
  /** A reason once something is known to be gone for good (a process exited, a container died). */
  gone?: () => Promise<string | undefined>;
  timeoutMs: number;
  /** Where to look when it fails (a log directory). */
  where: string;
}

/**
 * Bounded wait: every wanted master answers /healthz, the masters' leader counts every wanted tserver
 * alive, and each wanted tserver answers /healthz.
 */
export async function waitVerifyHealthy(o: HealthWaitOptions): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  let why = 'master not answering';
  while (Date.now() < deadline) {
    const gone = o.gone ? await o.gone() : undefined;
    if (gone !== undefined) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, gone);
    try {
      const masters = o.masterWebUrls();
      const mastersUp = await Promise.all(masters.map((u) => isHealthy(u)));
      // Only the leader answers the tablet servers' state (a follower answers 503 NOT_THE_LEADER).
      let body: { tabletServers?: Array<{ rpcAddress: string; alive: boolean }> } | undefined;
      for (const u of masters) {
        body = (await getJson(`${u}/api/v1/tablet-servers`, 1000).catch(() => undefined)) as typeof body;
        if (body !== undefined) break;
      }
      if (!mastersUp.every(Boolean)) why = `${mastersUp.filter(Boolean).length} of ${masters.length} master(s) answering /healthz`;
      else if (body === undefined) why = 'no master answered as the leader';
      else {
        const alive = new Set((body.tabletServers ?? []).filter((t) => t.alive).map((t) => t.rpcAddress));
        const want = o.tservers();
        // The master may still count a just-killed tserver alive (heartbeat not yet timed out):
        // the restarted server itself must answer too.
        const up = await Promise.all(want.map((t) => isHealthy(t.webUrl)));
        if (want.every((t, i) => alive.has(t.rpcAddress) && up[i])) return;
        why = `${alive.size} of ${want.length} tablet servers alive, ${up.filter(Boolean).length} answering /healthz`;
      }
    } catch (e) {
      why = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
  }
  throw new DbError(ErrorCode.TIMED_OUT, `cluster not healthy within ${o.timeoutMs} ms (${why}); logs in ${o.where}`);
}

/** Set a run-time flag on one server: console first, admin RPC for a tserver without one. */
export async function setServerFlag(s: VerifyServerRef, name: string, value: string, rpc: RpcClient): Promise<void> {
  try {
    await postFlag(s.webUrl, name, value, true, s.consoleToken);
    return;
  } catch (e) {
    if (s.role !== 'tserver' || !(e instanceof DbError) || e.code !== ErrorCode.NETWORK_ERROR) throw e;
  }
  // A just-restarted tserver may not accept connections yet: a few bounded attempts.
  for (let attempt = 1; ; attempt++) {
    try {
      await rpc.call(s.rpcAddress, tabletServerMethods().setFlag, { name, value, force: true }, { timeoutMs: 3_000 });
      return;
    } catch (e) {
      if (attempt >= SET_FLAG_ATTEMPTS_MAX) throw e;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}
