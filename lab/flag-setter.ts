/** Setting a flag at run time on some servers of a node, reporting per server. */
import { DbError, ErrorCode } from '../common';
import type { NodeName, ServerRole } from './cluster-spec';
import type { FlagSetResult } from './cluster-driver';
import { postFlag } from './console-http';

export interface FlagTarget {
  node: NodeName;
  role: ServerRole;
  webUrl: string;
}

/**
 * Tries every target. Succeeds when at least one server took the flag: a tserver-only flag sent to a
 * whole node is refused by its master, which is expected. Throws (with every server's reason) when none did.
 */
export async function setFlagOnServers(targets: readonly FlagTarget[], name: string, value: string, force: boolean): Promise<FlagSetResult[]> {
  const results = await Promise.all(
    targets.map(async (t): Promise<FlagSetResult> => {
      try {
        const v = await postFlag(t.webUrl, name, value, force);
        return { node: t.node, role: t.role, ok: true, value: v };
      } catch (e) {
        return { node: t.node, role: t.role, ok: false, error: (e as Error).message };
      }
    }),
  );
  if (results.length > 0 && !results.some((r) => r.ok)) {
    const first = results[0]!;
    const reasons = results.map((r) => `${r.node} ${r.role}: ${r.error ?? ''}`).join('; ');
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `flag ${name}=${value} was refused: ${reasons}`, { node: first.node, flag: name });
  }
  return results;
}
