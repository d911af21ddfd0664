/**
 * What every server process needs at start, whatever its kind: its bind address from a
 * `--rpc_bind_addresses` value, and its permanent uuid, created on first start (DATA/instance).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from './errors';
import { newId } from './ids';

/** The first `host:port` of a comma list; a missing port takes `defPort`, a missing host 127.0.0.1. */
export function splitHostPort(s: string, defPort: number): { host: string; port: number } {
  const t = s.split(',')[0]!.trim();
  if (!t) return { host: '127.0.0.1', port: defPort };
  const i = t.lastIndexOf(':');
  if (i < 0) return { host: t, port: defPort };
  const port = Number(t.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new DbError(ErrorCode.INVALID_ARGUMENT, `bad port in '${t}'`);
  return { host: t.slice(0, i) || '127.0.0.1', port };
}

/** This server's permanent uuid, created on first start (DATA/instance, written temp + rename). */
export function loadOrCreateUuid(dataDir: string): string {
  const file = path.join(dataDir, 'instance');
  if (fs.existsSync(file)) {
    let v: unknown;
    try {
      v = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      throw new DbError(ErrorCode.CORRUPTION, `${file} is not this server's identity (JSON with its uuid): ${(e as Error).message}`);
    }
    const uuid = (v as { uuid?: unknown } | null)?.uuid;
    if (typeof uuid !== 'string' || !uuid) throw new DbError(ErrorCode.CORRUPTION, `${file} has no uuid`);
    return uuid;
  }
  const uuid = newId();
  fs.writeFileSync(file + '.tmp', JSON.stringify({ uuid, createdAt: new Date().toISOString() }));
  fs.renameSync(file + '.tmp', file);
  return uuid;
}
