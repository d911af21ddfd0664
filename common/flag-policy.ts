/**
 * Who may change which flag at run time (docs/security.md). `Flags.setAtRuntime` is the mechanism
 * (runtime tag, or force); this is the operator's door to it — the console's POST /api/v1/flags and
 * the SetFlag RPC go through here, a server's own code does not. Two start-only switches open it
 * further: --allow_unsafe_flag_changes lets `force` change flags not tagged runtime, and
 * --enable_test_flags lets the `dangerous` TEST_ flags (data loss, corruption) be set. A lab starts
 * its servers with both; a production server has neither, so a stolen console token still cannot
 * make a replica lie.
 */
import { DbError, ErrorCode } from './errors';
import { defineFlag, flagDefinition, FlagTag, unknownFlag, type Flags } from './flags';

export const ENABLE_TEST_FLAGS = defineFlag({
  name: 'enable_test_flags',
  type: 'bool',
  default: false,
  help: "Allow the TEST_ flags tagged 'dangerous' (they can lose or corrupt data) to be set at run time (console, set_flag). The lab and `tessera start` pass it; never set it in production. Start-only.",
});

export const ALLOW_UNSAFE_FLAG_CHANGES = defineFlag({
  name: 'allow_unsafe_flag_changes',
  type: 'bool',
  default: false,
  help: "Allow `force` to change, at run time, flags not tagged 'runtime' (their code may read them only at start, so the change may take effect partly or not at all). The lab and `tessera start` pass it. Start-only.",
});

/** Flags that decide what may be changed (or who may): never changeable at run time, even forced. */
const START_ONLY = new Set<string>([ENABLE_TEST_FLAGS.name, ALLOW_UNSAFE_FLAG_CHANGES.name, 'webserver_token_file', 'cluster_secret_file']);

function denied(message: string, flag: string, reason: string): DbError {
  return new DbError(ErrorCode.PERMISSION_DENIED, message, { flag, reason });
}

/**
 * Change a flag at an operator's request. Throws INVALID_ARGUMENT (unknown flag, bad value),
 * NOT_SAFE (not a runtime flag and no force), PERMISSION_DENIED (details.reason: 'start_only',
 * 'allow_unsafe_flag_changes', 'enable_test_flags').
 */
export function setFlagByOperator(flags: Flags, name: string, raw: string | number | boolean, force: boolean): unknown {
  const def = flagDefinition(name);
  if (!def) throw unknownFlag(name);
  if (START_ONLY.has(name)) throw denied(`flag --${name} can only be set when the server starts`, name, 'start_only');
  const runtime = def.tags.includes(FlagTag.runtime);
  if (!runtime && force && !flags.get(ALLOW_UNSAFE_FLAG_CHANGES)) {
    throw denied(`flag --${name} is not a runtime flag, and this server was not started with --allow_unsafe_flag_changes: force is refused`, name, 'allow_unsafe_flag_changes');
  }
  if (def.tags.includes(FlagTag.dangerous) && !flags.get(ENABLE_TEST_FLAGS)) {
    throw denied(`flag --${name} can lose or corrupt data; this server was not started with --enable_test_flags`, name, 'enable_test_flags');
  }
  return flags.setAtRuntime(name, raw, force);
}
