/** The cluster of one verification run: child processes on loopback, or a Docker lab of the run's own. */
import type { DriverKind } from '../cluster-spec';
import { DockerVerifyCluster } from './docker-verify-cluster';
import { VerifyCluster } from './verify-cluster';
import type { VerifyTarget } from './verify-target';

export interface PlanVerifyClusterOptions {
  driver: DriverKind;
  baseDir: string;
  tservers: number;
  /** Masters on nodes 0 .. masters-1: 1 (default) or 3. */
  masters?: 1 | 3;
  /** Process driver only: node i listens on 127.0.0.(hostBase+i). */
  hostBase: number;
  /** Process: added to the standard ports; docker: the published-port offset. */
  portOffset: number;
  /** Extra `--name=value` flags for every server. */
  serverFlags?: string[];
  log?: (line: string) => void;
}

export async function planVerifyCluster(o: PlanVerifyClusterOptions): Promise<VerifyTarget> {
  const flags = { ...(o.serverFlags?.length ? { masterFlags: o.serverFlags, tserverFlags: o.serverFlags } : {}), ...(o.masters !== undefined ? { masters: o.masters } : {}) };
  if (o.driver === 'docker') return DockerVerifyCluster.plan({ baseDir: o.baseDir, tservers: o.tservers, portOffset: o.portOffset, ...(o.log ? { log: o.log } : {}), ...flags });
  return VerifyCluster.plan({ baseDir: o.baseDir, tservers: o.tservers, hostBase: o.hostBase, portOffset: o.portOffset, ...flags });
}
