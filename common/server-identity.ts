/**
 * What every server process needs at start, whatever its kind: its bind address from a
 * `--rpc_bind_addresses` value, and its permanent uuid, created on first start (DATA/instance).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LOG_LEVEL } from './common-flags';
import { DbError, ErrorCode } from './errors';
import type { Flags } from './flags';
import { makeDirs } from './fs-dirs';
import { newId } from './ids';
import { createLogger, followLogLevel, LogRing, type Logger } from './log';
import { FS_DATA_DIRS } from './server-flags';

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

/** An unspecified address (every interface): fine to bind to, not something others can reach. */
export function isAnyHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/**
 * The address this server is known by (its identity among the servers): `broadcast`
 * (--server_broadcast_addresses, a missing port taking `boundPort`) or else the bound `host:port`.
 * Binding to every interface without a broadcast address is refused: others could not reach it.
 */
export function advertisedAddress(broadcast: string, bind: { host: string; port: number }, boundPort: number): string {
  if (broadcast.trim() !== '') {
    const b = splitHostPort(broadcast, boundPort);
    if (isAnyHost(b.host)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--server_broadcast_addresses ${broadcast} is not an address others can reach`);
    if (b.port === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--server_broadcast_addresses ${broadcast} needs a port other than 0`);
    return `${b.host}:${b.port}`;
  }
  if (isAnyHost(bind.host)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--rpc_bind_addresses ${bind.host}:${bind.port} binds every interface: give --server_broadcast_addresses, the host:port others reach this server at`);
  return `${bind.host}:${boundPort}`;
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

/**
 * A server's data directory (made if missing), permanent uuid and logger, from its flags — the first
 * step of a master's and a tserver's start alike. A logger handed in (tests) keeps its own level;
 * ours follows --log_level, also at run time.
 */
export function serverBasics(name: 'master' | 'tserver', flags: Flags, o: { log?: Logger; logRing?: LogRing }): { dataDir: string; uuid: string; logRing: LogRing; log: Logger } {
  const dataDir = flags.get(FS_DATA_DIRS).split(',')[0]!.trim();
  if (!dataDir) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--fs_data_dirs is required');
  makeDirs(dataDir, 'data directory');
  const uuid = loadOrCreateUuid(dataDir);
  const logRing = o.logRing ?? new LogRing();
  const log = (o.log ?? createLogger({ name, ring: logRing })).child({ uuid });
  if (!o.log) followLogLevel(log, () => flags.get(LOG_LEVEL), (l) => flags.onChange(LOG_LEVEL, l));
  return { dataDir, uuid, logRing, log };
}
