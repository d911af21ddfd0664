/**
 * The flag registry (docs/flags.md). Definitions are global (a flag is defined once, next to the code it
 * governs); values live in a `Flags` instance per server, so several servers in one process (tests,
 * simulation) can carry different values — a TEST_ flag set on node 0 affects node 0 only.
 */
import * as fs from 'node:fs';
import { DbError, ErrorCode } from './errors';

export const FlagTag = {
  runtime: 'runtime',
  test: 'test',
  sensitive: 'sensitive',
  hidden: 'hidden',
  /**
   * Setting it can lose or corrupt committed data, or break the cluster's consistency: refused at
   * run time unless the server was started with --enable_test_flags (common/flag-policy.ts).
   */
  dangerous: 'dangerous',
} as const;
export type FlagTag = (typeof FlagTag)[keyof typeof FlagTag];

export type FlagType = 'bool' | 'int' | 'double' | 'string';
type ValueOf<K extends FlagType> = K extends 'bool' ? boolean : K extends 'string' ? string : number;

export interface FlagDef<T = unknown> {
  readonly name: string;
  readonly type: FlagType;
  readonly default: T;
  readonly help: string;
  readonly tags: readonly FlagTag[];
  /** Extra validation beyond the type; returns an error text or undefined. */
  readonly validate?: (v: T) => string | undefined;
}

const DEFS = new Map<string, FlagDef>();

export function defineFlag<K extends FlagType>(spec: {
  name: string;
  type: K;
  default: ValueOf<K>;
  help: string;
  tags?: FlagTag[];
  validate?: (v: ValueOf<K>) => string | undefined;
}): FlagDef<ValueOf<K>> {
  const tags = new Set<FlagTag>(spec.tags ?? []);
  // Every TEST_ flag is unsafe for production and hidden from the default /varz view.
  if (spec.name.startsWith('TEST_')) {
    tags.add(FlagTag.test);
    tags.add(FlagTag.hidden);
  }
  const def: FlagDef<ValueOf<K>> = { ...spec, tags: [...tags] };
  const prev = DEFS.get(spec.name);
  if (prev) {
    // Modules can be loaded twice (vitest); a second identical definition is harmless.
    if (prev.type !== def.type || prev.default !== def.default) throw new Error(`flag ${spec.name} defined twice differently`);
    return prev as FlagDef<ValueOf<K>>;
  }
  DEFS.set(spec.name, def as FlagDef);
  return def;
}

export function flagDefinitions(): FlagDef[] {
  return [...DEFS.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export function flagDefinition(name: string): FlagDef | undefined {
  return DEFS.get(name);
}

function badValue(def: FlagDef, raw: string, expected: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, `invalid value '${raw}' for flag --${def.name}: expected ${expected}`, { flag: def.name });
}

export function parseFlagValue(def: FlagDef, raw: string | number | boolean): unknown {
  const s = String(raw).trim();
  let v: unknown;
  switch (def.type) {
    case 'bool':
      if (['true', '1', 'yes', 'on', ''].includes(s.toLowerCase())) v = true;
      else if (['false', '0', 'no', 'off'].includes(s.toLowerCase())) v = false;
      else throw badValue(def, s, 'a boolean (true/false)');
      break;
    case 'int':
      if (!/^-?\d+$/.test(s)) throw badValue(def, s, 'an integer');
      v = Number(s);
      if (!Number.isSafeInteger(v)) throw badValue(def, s, 'an integer within ±2^53');
      break;
    case 'double':
      v = Number(s);
      if (s === '' || !Number.isFinite(v)) throw badValue(def, s, 'a number');
      break;
    case 'string':
      v = String(raw);
      break;
  }
  const err = def.validate?.(v);
  if (err) throw badValue(def, s, err);
  return v;
}

export function unknownFlag(name: string): DbError {
  const near = [...DEFS.keys()].filter((n) => n.includes(name) || name.includes(n)).slice(0, 3);
  const hint = near.length ? ` (did you mean ${near.map((n) => '--' + n).join(', ')}?)` : '';
  return new DbError(ErrorCode.INVALID_ARGUMENT, `unknown flag --${name}${hint}`, { flag: name });
}

export interface FlagView {
  name: string;
  value: unknown;
  default: unknown;
  changed: boolean;
  type: FlagType;
  help: string;
  tags: FlagTag[];
}

type Listener = (value: unknown) => void;

export class Flags {
  private readonly values = new Map<string, unknown>();
  private readonly listeners = new Map<string, Listener[]>();

  get<T>(def: FlagDef<T>): T {
    return (this.values.has(def.name) ? this.values.get(def.name) : def.default) as T;
  }

  /** Set from text (command line, flag file, RPC). Unknown names and bad values throw INVALID_ARGUMENT. */
  setFromString(name: string, raw: string | number | boolean): unknown {
    const def = DEFS.get(name);
    if (!def) throw unknownFlag(name);
    const v = parseFlagValue(def, raw);
    this.values.set(name, v);
    for (const l of this.listeners.get(name) ?? []) l(v);
    return v;
  }

  /** A change at run time: only `runtime` flags unless forced (YugabyteDB's set_flag rule). */
  setAtRuntime(name: string, raw: string | number | boolean, force = false): unknown {
    const def = DEFS.get(name);
    if (!def) throw unknownFlag(name);
    if (!def.tags.includes(FlagTag.runtime) && !force) {
      throw new DbError(ErrorCode.NOT_SAFE, `flag --${name} is not safe to change at run time; use force to change it anyway`, { flag: name });
    }
    return this.setFromString(name, raw);
  }

  set<T>(def: FlagDef<T>, v: T): void {
    this.setFromString(def.name, String(v));
  }

  isChanged(name: string): boolean {
    return this.values.has(name);
  }

  onChange<T>(def: FlagDef<T>, l: (v: T) => void): () => void {
    const arr = this.listeners.get(def.name) ?? [];
    arr.push(l as Listener);
    this.listeners.set(def.name, arr);
    return () => {
      const i = arr.indexOf(l as Listener);
      if (i >= 0) arr.splice(i, 1);
    };
  }

  /** Every defined flag with its current value (sensitive values masked). */
  view(): FlagView[] {
    return flagDefinitions().map((d) => ({
      name: d.name,
      value: d.tags.includes(FlagTag.sensitive) ? '***' : this.values.has(d.name) ? this.values.get(d.name) : d.default,
      default: d.default,
      changed: this.values.has(d.name),
      type: d.type,
      help: d.help,
      tags: [...d.tags],
    }));
  }

  /** Changed flags as `--name=value` (for passing on to child processes). */
  toArgs(): string[] {
    return [...this.values.entries()].map(([k, v]) => `--${k}=${String(v)}`);
  }
}

/**
 * Split the umbrella-command list form `"a=1,b=2"`; a value containing commas is written in braces:
 * `"placement={c.r.z1,c.r.z2},x=1"`.
 */
export function parseFlagList(list: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let i = 0;
  while (i < list.length) {
    while (i < list.length && (list[i] === ',' || list[i] === ' ')) i++;
    if (i >= list.length) break;
    const eq = list.indexOf('=', i);
    const comma = list.indexOf(',', i);
    if (eq < 0 || (comma >= 0 && comma < eq)) {
      const name = list.slice(i, comma < 0 ? undefined : comma).trim();
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `flag list entry '${name}' has no '=value'`, { entry: name });
    }
    const name = list.slice(i, eq).trim().replace(/^--/, '');
    let j = eq + 1;
    let value: string;
    if (list[j] === '{') {
      const close = list.indexOf('}', j);
      if (close < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unclosed '{' in value of flag ${name}`, { flag: name });
      value = list.slice(j + 1, close);
      j = close + 1;
    } else {
      const end = list.indexOf(',', j);
      value = list.slice(j, end < 0 ? undefined : end);
      j = end < 0 ? list.length : end;
    }
    out.push([name, value]);
    i = j;
  }
  return out;
}

/**
 * One `name=value` (a leading `--` accepted), as an option that passes a flag on to servers takes it
 * (`tessera verify --server_flag`, `bench --vs etcd --tserver-flag`); `option` names it in the error.
 */
export function flagAssignment(text: string, option: string): { name: string; value: string } {
  const m = /^(?:--)?([A-Za-z_][A-Za-z0-9_]*)=([\s\S]*)$/.exec(text);
  if (!m) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${option} must look like name=value, got '${text}'`);
  return { name: m[1]!, value: m[2]! };
}

/** Read a gflags-style flag file: one `--name=value` per line, `#` comments. */
export function readFlagFile(path: string): Array<[string, string]> {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot read flag file ${path}: ${(e as Error).message}`);
  }
  const out: Array<[string, string]> = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const m = /^--?([A-Za-z0-9_]+)(?:=(.*))?$/.exec(t);
    if (!m) throw new DbError(ErrorCode.INVALID_ARGUMENT, `bad line in flag file ${path}: '${t}'`);
    out.push([m[1]!, m[2] ?? 'true']);
  }
  return out;
}

/**
 * Parse `--name=value`, `--name value`-free gflags-style arguments into a Flags instance. Non-flag
 * arguments are returned as positional. `--flagfile=F` is expanded in place.
 */
export function parseFlagArgs(argv: readonly string[], flags = new Flags()): { flags: Flags; positional: string[] } {
  const positional: string[] = [];
  for (const arg of argv) {
    const m = /^--?([A-Za-z0-9_]+)(?:=([\s\S]*))?$/.exec(arg);
    if (!m) {
      positional.push(arg);
      continue;
    }
    const name = m[1]!;
    let value = m[2];
    if (name === 'flagfile') {
      if (value === undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--flagfile needs a path: --flagfile=FILE');
      for (const [n, v] of readFlagFile(value)) flags.setFromString(n, v);
      continue;
    }
    if (value === undefined) {
      const def = DEFS.get(name);
      if (def?.type === 'bool') value = 'true';
      else if (name.startsWith('no') && DEFS.get(name.slice(2))?.type === 'bool') {
        flags.setFromString(name.slice(2), 'false');
        continue;
      } else if (!def) throw unknownFlag(name);
      else throw new DbError(ErrorCode.INVALID_ARGUMENT, `flag --${name} needs a value: --${name}=VALUE`, { flag: name });
    }
    flags.setFromString(name, value);
  }
  return { flags, positional };
}
