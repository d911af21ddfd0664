/**
 * A master's start when a port is taken: it listens before it opens (and on a first start bootstraps)
 * its sys catalog, so a taken RPC port fails with IO_ERROR and leaves no catalog behind; a taken
 * console port fails too and releases the RPC port and the catalog, so the same master starts next.
 * And its identity with --server_broadcast_addresses.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { parseFlagArgs } from '../../common/flags';
import { createLogger } from '../../common/log';
import { advertisedAddress } from '../../common/server-identity';
import { startMaster } from '../../master';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-master-start-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const log = createLogger({ name: 'test', level: 'silent' });

/** A port on 127.0.0.1 held by a plain TCP listener until `close`. */
async function holdPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  return { port, close: () => new Promise<void>((resolve) => s.close(() => resolve())) };
}

async function freePort(): Promise<number> {
  const h = await holdPort();
  await h.close();
  return h.port;
}

function masterFlags(dataDir: string, rpcPort: number, webPort: number) {
  return parseFlagArgs([`--fs_data_dirs=${dataDir}`, `--rpc_bind_addresses=127.0.0.1:${rpcPort}`, `--webserver_port=${webPort}`]).flags;
}

async function startError(p: Promise<unknown>): Promise<DbError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DbError) return e;
    throw e;
  }
  throw new Error('expected the start to fail');
}

describe('master start with a port taken', () => {
  it('RPC port taken: IO_ERROR naming it, and no sys catalog written', async () => {
    const held = await holdPort();
    const dataDir = path.join(tmp, 'rpc-taken');
    try {
      const e = await startError(startMaster({ flags: masterFlags(dataDir, held.port, 0), log }));
      expect(e.code).toBe(ErrorCode.IO_ERROR);
      expect(e.message).toContain(`cannot listen on 127.0.0.1:${held.port}`);
      expect(fs.existsSync(path.join(dataDir, 'sys-catalog'))).toBe(false);
    } finally {
      await held.close();
    }
  });

  it('console port taken: the start fails, and the RPC port and catalog are released for the next start', async () => {
    const held = await holdPort();
    const rpcPort = await freePort();
    const dataDir = path.join(tmp, 'web-taken');
    try {
      const e = await startError(startMaster({ flags: masterFlags(dataDir, rpcPort, held.port), log }));
      expect(e.code).toBe(ErrorCode.IO_ERROR);
      expect(e.message).toContain(`${held.port}`);
    } finally {
      await held.close();
    }
    // Same data directory and RPC port: would fail with EADDRINUSE or a locked catalog if the failed start kept them.
    const m = await startMaster({ flags: masterFlags(dataDir, rpcPort, 0), log });
    try {
      expect(m.rpcAddress).toBe(`127.0.0.1:${rpcPort}`);
    } finally {
      await m.stop();
    }
  });
});

describe('server identity: --server_broadcast_addresses', () => {
  it('advertisedAddress: the broadcast address (a missing port takes the bound one) or else the bound address; every-interface binds need a broadcast address, and a broadcast address must be reachable', () => {
    const bind = { host: '127.0.0.1', port: 9100 };
    expect(advertisedAddress('', bind, 9100)).toBe('127.0.0.1:9100');
    expect(advertisedAddress('', { host: '127.0.0.1', port: 0 }, 41234)).toBe('127.0.0.1:41234');
    expect(advertisedAddress('n2:9100', { host: '0.0.0.0', port: 9100 }, 9100)).toBe('n2:9100');
    expect(advertisedAddress('n2', { host: '0.0.0.0', port: 0 }, 41234)).toBe('n2:41234');
    for (const [b, host] of [['', '0.0.0.0'], ['', '::'], ['0.0.0.0:9100', '0.0.0.0']] as const) {
      expect(() => advertisedAddress(b, { host, port: 9100 }, 9100)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    }
  });

  it('a master binding every interface without a broadcast address refuses to start (INVALID_ARGUMENT) before it listens; with one it is known by it', async () => {
    const rpcPort = await freePort();
    const refused = await startError(
      startMaster({ flags: parseFlagArgs([`--fs_data_dirs=${path.join(tmp, 'any')}`, `--rpc_bind_addresses=0.0.0.0:${rpcPort}`, '--webserver_port=0']).flags, log }),
    );
    expect(refused.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(refused.message).toContain('--server_broadcast_addresses');
    // Known by its broadcast name (bound on loopback here: tests bind nothing wider).
    const m = await startMaster({
      flags: parseFlagArgs([`--fs_data_dirs=${path.join(tmp, 'broadcast')}`, `--rpc_bind_addresses=127.0.0.1:${rpcPort}`, `--server_broadcast_addresses=localhost:${rpcPort}`, '--webserver_port=0']).flags,
      log,
    });
    try {
      expect(m.rpcAddress).toBe(`localhost:${rpcPort}`);
    } finally {
      await m.stop();
    }
  });
});
