/**
 * Whether a lab container's server has ended while a health wait runs (docker-driver.ts): the
 * container exited, or — the container still running for the node's other server — the node
 * supervisor's exit line for this server stands in its log.
 */
import type Docker from 'dockerode';
import type { ServerRole } from './cluster-spec';
import { demuxDockerFrames } from './docker-frames';
import type { NodeRecord } from './lab-state';
import { serverExitSince } from './node-supervisor';

/** How often a health wait reads a running container's log for its server's exit line. */
const EXIT_CHECK_INTERVAL_MS = 1_000;

/**
 * A HealthTarget.gone for `role` of node `n`. `startedAtMs`: when this server was started alone inside
 * a running container (SIGUSR2 to its supervisor); otherwise the container's current run started it.
 */
export function serverGoneProbe(container: Docker.Container, n: NodeRecord, role: ServerRole, startedAtMs: number): () => Promise<string | undefined> {
  // A server that ends while the wait runs (a bad flag, a port in use) is gone even though its
  // container keeps running for the node's other server: its supervisor's exit line, stamped at or
  // after this server's start (the container run's, or startedAtMs), says so. Docker's log
  // timestamps tell it from the exits of earlier runs (a restart's stop, a kill before a start).
  let logsReadMs = 0;
  return async () => {
    let sinceMs: number;
    try {
      const info = await container.inspect();
      if (!info.State.Running) return `container ${n.containerName} exited with status ${info.State.ExitCode}`;
      sinceMs = Math.max(Date.parse(info.State.StartedAt), startedAtMs);
    } catch (e) {
      return `container ${String(n.containerName)} is gone (${(e as Error).message})`;
    }
    if (!Number.isFinite(sinceMs) || Date.now() - logsReadMs < EXIT_CHECK_INTERVAL_MS) return undefined;
    logsReadMs = Date.now();
    try {
      const raw = (await container.logs({ stdout: true, stderr: true, timestamps: true, since: Math.floor(sinceMs / 1000), follow: false })) as unknown as Buffer;
      const exit = serverExitSince(demuxDockerFrames(raw), role, sinceMs);
      return exit === undefined ? undefined : `${exit} inside container ${n.containerName}, which keeps running for the node's other server`;
    } catch {
      return undefined; // the log not readable now: the next poll, or the timeout, decides
    }
  };
}
