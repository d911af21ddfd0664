/** Setting a flag at run time on some servers of a node, reporting per server. */
import * as fs from 'node:fs';
import { DbError, ErrorCode } from '../common';
import type { NodeName, ServerRole } from './cluster-spec';
import type { FlagSetResult } from './cluster-driver';
import { postFlag } from './console-http';

export interface FlagTarget {
  node: NodeName;
  role: ServerRole;
  webUrl: string;
  /** The bearer token its console asks for (consoleTokenOf), if any. */
  token?: string | undefined;
}

/**
 * Start flags of every server a lab (or `tessera start`) runs: a lab injects faults, so the dangerous
 * TEST_ flags and forced changes are allowed there (docs/security.md); `name=value` form, which every
 * server entry (the fake-node fixture too) parses.
 */
export const LAB_SERVER_FLAGS: readonly string[] = ['--enable_test_flags=true', '--allow_unsafe_flag_changes=true'];

/**
 * The bearer token a server's console asks for, read from the file its argv names
 * (--webserver_token_file, else --cluster_secret_file): its first line. Undefined when it names none.
 */
export function consoleTokenOf(argv: readonly string[], mapPath: (p: string) => string = (p) => p): string | undefined {
  const fileOf = (flag: string): string | undefined => {
    const a = [...argv].reverse().find((x) => x.startsWith(`--${flag}=`));
    const v = a?.slice(flag.length + 3);
    return v ? v : undefined;
  };
  const file = fileOf('webserver_token_file') ?? fileOf('cluster_secret_file');
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(mapPath(file), 'utf8');
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot read the console token file ${file}: ${(e as Error).message}`);
  }
  return text.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '' && !l.startsWith('#'));
}

/**
 * Tries every target. Succeeds when at least one server took the flag: a tserver-only flag sent to a
 * whole node is refused by its master, which is expected. Throws (with every server's reason) when none did.
 */
export async function setFlagOnServers(targets: readonly FlagTarget[], name: string, value: string, force: boolean): Promise<FlagSetResult[]> {
  const results = await Promise.all(
    targets.map(async (t): Promise<FlagSetResult> => {
      try {
        const v = await postFlag(t.webUrl, name, value, force, t.token);
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
