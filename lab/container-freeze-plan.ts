/**
 * Pause and resume in a Docker lab, and the state of each server in a container, decided without an
 * engine. A container is one node running one or two servers (master and/or tserver) under a
 * supervisor. `docker pause` freezes the whole container (cgroup freezer); one server of several is
 * frozen alone with SIGSTOP to its process inside the container and thawed with SIGCONT, so pausing
 * n0's tserver leaves n0's master answering.
 */
import { DbError, ErrorCode } from '../common';
import type { ServerState } from './cluster-driver';
import type { NodeName, ServerRole } from './cluster-spec';

/** One action of a pause/resume on a container, in order. */
export type FreezeStep =
  | { type: 'docker-pause' }
  | { type: 'docker-unpause' }
  /** SIGSTOP / SIGCONT to these servers' processes inside the (running) container. */
  | { type: 'signal'; signal: 'SIGSTOP' | 'SIGCONT'; roles: ServerRole[] };

export interface FreezeInput {
  op: 'pause' | 'resume';
  node: NodeName;
  /** The servers the container runs. */
  roles: readonly ServerRole[];
  /** The server targeted alone; undefined = the whole node. Must be one of roles. */
  role: ServerRole | undefined;
  container: ServerState;
}

/**
 * What pause/resume does. A role that is the container's only server, or no role, means the whole
 * container: docker pause / unpause (resume also sends SIGCONT to every server of a multi-server
 * container, thawing one paused alone before). One role of several: SIGSTOP / SIGCONT to it alone.
 * A stopped container has nothing to freeze or thaw; a container paused as a whole cannot thaw one
 * server alone (its processes are in the freezer): an INVALID_ARGUMENT naming the way out.
 */
export function freezePlan(x: FreezeInput): FreezeStep[] {
  const whole = x.role === undefined || x.roles.length === 1;
  if (x.container === 'stopped') return [];
  if (x.op === 'pause') {
    if (x.container === 'paused') return []; // already frozen, every server of it
    return whole ? [{ type: 'docker-pause' }] : [{ type: 'signal', signal: 'SIGSTOP', roles: [x.role!] }];
  }
  if (whole) {
    const steps: FreezeStep[] = x.container === 'paused' ? [{ type: 'docker-unpause' }] : [];
    if (x.roles.length > 1) steps.push({ type: 'signal', signal: 'SIGCONT', roles: [...x.roles] });
    return steps;
  }
  if (x.container === 'paused') {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${x.node} is paused as a whole (docker pause); resume it without --role`);
  }
  return [{ type: 'signal', signal: 'SIGCONT', roles: [x.role!] }];
}

/**
 * The state of each server of a container: a stopped or paused container's servers all are; in a
 * running one, each server's own process state (read inside the container), except that a container's
 * only server runs while the container does (the supervisor exits with its last server and is never
 * SIGSTOPped alone). processStates is undefined when they could not be read: the container's state then.
 */
export function serverStatesIn(container: ServerState, roles: readonly ServerRole[], processStates: Partial<Record<ServerRole, ServerState>> | undefined): Record<ServerRole, ServerState> {
  const res = {} as Record<ServerRole, ServerState>;
  for (const r of roles) res[r] = container !== 'running' || roles.length === 1 ? container : (processStates?.[r] ?? container);
  return res;
}

/** Whether status must read the server states inside the container (a running multi-server one). */
export function needsProcessStates(container: ServerState, roles: readonly ServerRole[]): boolean {
  return container === 'running' && roles.length > 1;
}
