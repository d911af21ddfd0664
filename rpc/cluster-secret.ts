/**
 * The cluster secret (--cluster_secret_file, docs/security.md): a file of one or two lines, each a
 * secret of at least CLUSTER_SECRET_CHARS_MIN printable characters. The first line is the one this
 * process proves (and sends to consoles as a bearer token); every line is accepted from peers, so a
 * secret is rotated without downtime: add the new one as a second line everywhere, then swap the
 * lines everywhere, then drop the old one.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { DbError, defineFlag, ErrorCode, FlagTag, type Flags } from '../common';

export const CLUSTER_SECRET_FILE = defineFlag({
  name: 'cluster_secret_file',
  type: 'string',
  default: '',
  help: 'File holding the cluster secret (one line; a second line is a second secret also accepted, for rotation). Every RPC connection then proves it with an HMAC challenge on connect, and console mutations accept it as a bearer token. Required when an RPC address binds other than loopback.',
  tags: [FlagTag.sensitive],
});

export const CLUSTER_SECRET_ENV = 'TESSERA_CLUSTER_SECRET_FILE';
export const CLUSTER_SECRET_CHARS_MIN = 16;
const SECRET_LINES_MAX = 2;

/** Secrets in the order of the file: [0] is sent, all are accepted. */
export type ClusterSecrets = readonly Buffer[];

/** Parse a secret file's text; throws INVALID_ARGUMENT naming `what` (the file) on a bad one. */
export function parseSecrets(text: string, what: string): ClusterSecrets {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (lines.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} holds no secret`);
  if (lines.length > SECRET_LINES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} holds ${lines.length} secrets; at most ${SECRET_LINES_MAX} (the current one, then the other one accepted during a rotation)`);
  for (const l of lines) {
    if (l.length < CLUSTER_SECRET_CHARS_MIN || !/^[\x21-\x7e]+$/.test(l)) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what}: a secret must be at least ${CLUSTER_SECRET_CHARS_MIN} printable characters without spaces (e.g. \`openssl rand -hex 32\`)`);
    }
  }
  return lines.map((l) => Buffer.from(l, 'utf8'));
}

export function readSecretFile(path: string, flagName = CLUSTER_SECRET_FILE.name): ClusterSecrets {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot read --${flagName} ${path}: ${(e as Error).message}`, { flag: flagName });
  }
  return parseSecrets(text, `--${flagName} ${path}`);
}

/** The secrets of --cluster_secret_file, or none when it is not set. */
export function clusterSecretsOf(flags: Flags): ClusterSecrets {
  const p = flags.get(CLUSTER_SECRET_FILE);
  return p ? readSecretFile(p) : [];
}

/** A fresh secret as a file's text (a lab's, `openssl rand -hex 32` alike). */
export function newSecretText(): string {
  return `${crypto.randomBytes(32).toString('hex')}\n`;
}

/** Constant-time: does `given` equal one of `accepted`? (Digests first, so lengths leak nothing.) */
export function matchesOne(given: Buffer, accepted: readonly Buffer[]): boolean {
  const g = crypto.createHash('sha256').update(given).digest();
  let ok = false;
  for (const a of accepted) ok = crypto.timingSafeEqual(g, crypto.createHash('sha256').update(a).digest()) || ok;
  return ok;
}
