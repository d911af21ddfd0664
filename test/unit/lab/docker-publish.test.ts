/**
 * `lab up --driver docker --host_base N`: each node's ports published on its own loopback address at
 * the standard ports, as the process driver addresses its nodes; without --host_base, every node on
 * 127.0.0.1 with shifted ports. And without an engine, one line saying how to get one.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSpec, dockerPublishAddress } from '../../../lab';

const ROOT = path.resolve(__dirname, '../../..');

describe('docker lab publish addresses', () => {
  it('docker publish: with --host_base node i is published on 127.0.0.(N+i) at the standard ports; without it on 127.0.0.1 shifted by offset+i', () => {
    const onOwn = defaultSpec({ baseDir: os.tmpdir(), driver: 'docker', publishHostBase: 5, portOffset: 0 });
    expect([0, 1, 2].map((i) => dockerPublishAddress(onOwn, i))).toEqual([{ host: '127.0.0.5', bump: 0 }, { host: '127.0.0.6', bump: 0 }, { host: '127.0.0.7', bump: 0 }]);
    const shared = defaultSpec({ baseDir: os.tmpdir(), driver: 'docker' });
    expect([0, 1].map((i) => dockerPublishAddress(shared, i))).toEqual([{ host: '127.0.0.1', bump: 10_000 }, { host: '127.0.0.1', bump: 10_001 }]);
    expect(() => defaultSpec({ baseDir: os.tmpdir(), driver: 'docker', publishHostBase: 254 })).toThrow(/leaves no room/);
  });

  it('docker lab up without an engine: fails with SERVICE_UNAVAILABLE and one line on how to install and start one', () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-docker-none-'));
    try {
      // An engine socket that cannot exist, whatever the machine runs.
      const r = spawnSync(process.execPath, ['dist/cli/main.js', 'lab', 'up', '--driver', 'docker', '--host_base', '9', '--base_dir', base], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, DOCKER_HOST: `unix://${path.join(base, 'no-engine.sock')}` } });
      expect(r.status).not.toBe(0);
      const lines = r.stderr.trim().split('\n').filter((l) => l.includes('Docker engine not reachable'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/SERVICE_UNAVAILABLE/);
      expect(lines[0]).toMatch(/apt-get install -y docker\.io/);
      expect(lines[0]).toMatch(/--driver process/);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});
