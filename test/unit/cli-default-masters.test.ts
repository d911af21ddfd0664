/**
 * Where CLI commands connect without --master_addresses (cli/cli-io.ts defaultMasterAddresses):
 * the environment variable, else the running local cluster of the base directory, else 127.0.0.1:7100.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultMasterAddresses } from '../../cli/cli-io';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function baseWith(state: unknown): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-default-masters-'));
  dirs.push(d);
  if (state !== undefined) fs.writeFileSync(path.join(d, 'cluster.json'), typeof state === 'string' ? state : JSON.stringify(state));
  return d;
}

/** A pid no process has (the highest pid Linux hands out is below 2^22). */
const DEAD_PID = 2 ** 22 + 12345;

function state(pid: number, masterAddresses = '127.0.0.201:7100,127.0.0.202:7100'): unknown {
  return { version: 1, baseDir: '/unused', nodes: 2, masters: 2, masterAddresses, supervisorPid: pid, servers: [{ role: 'master', node: 0, rpcAddress: '127.0.0.201:7100', webAddress: '127.0.0.201:7000', dataDir: 'd', logFile: 'l', argv: [], pid }] };
}

describe('CLI default master addresses', () => {
  it('a running local cluster in the base directory is the default', () => {
    expect(defaultMasterAddresses({}, baseWith(state(process.pid)))).toBe('127.0.0.201:7100,127.0.0.202:7100');
  });

  it('TESSERA_MASTER_ADDRESSES wins over the local cluster', () => {
    expect(defaultMasterAddresses({ TESSERA_MASTER_ADDRESSES: '127.0.0.9:7100' }, baseWith(state(process.pid)))).toBe('127.0.0.9:7100');
  });

  it('a stopped cluster, no cluster, or an unreadable cluster.json fall back to 127.0.0.1:7100', () => {
    expect(defaultMasterAddresses({}, baseWith(state(DEAD_PID)))).toBe('127.0.0.1:7100');
    expect(defaultMasterAddresses({}, baseWith(undefined))).toBe('127.0.0.1:7100');
    expect(defaultMasterAddresses({}, baseWith({ version: 99 }))).toBe('127.0.0.1:7100');
  });
});
