/**
 * The parts the process and docker lab drivers share (lab/lab-driver-base.ts) and the docker driver's
 * node records (lab/docker-node-records.ts), without processes or a Docker engine: the flags each
 * server gets from the spec, in the order the drivers always gave them, and the secret's file.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSpec } from '../../lab/cluster-spec';
import { containerConsoleToken, containerServer, LAB_SECRET_FILE, writeLabSecret } from '../../lab/docker-node-records';
import { consoleTokenOf } from '../../lab/flag-setter';
import { addressesOf, hostPort, labServerFlags } from '../../lab/lab-driver-base';

describe('lab driver base', () => {
  it('lab driver base: spec flags come after the addresses and the extra flags, node flags last', () => {
    const spec = defaultSpec({ baseDir: 'lab-x', masters: 3, tserverFlags: { a: '1' }, masterFlags: { m: '2' }, nodeFlags: { n1: { b: '3' } }, nodeMasterFlags: { n1: { c: '4' } } });
    const f = labServerFlags(spec, 'n1', 'n0:7100', ['--cluster_secret_file=/data/s']);
    expect(f.tserver).toEqual(['--tserver_master_addrs=n0:7100', '--lab_node_name=n1', '--cluster_secret_file=/data/s', '--a=1', '--b=3']);
    expect(f.master).toEqual(['--master_addresses=n0:7100', '--cluster_secret_file=/data/s', '--m=2', '--c=4']);
    expect(labServerFlags(spec, 'n0', 'h:1').tserver).toEqual(['--tserver_master_addrs=h:1', '--lab_node_name=n0', '--a=1']);
  });

  it('lab driver base: host:port splits at the last colon; addresses keep only the four address fields', () => {
    expect(hostPort('127.0.0.2:9100')).toEqual({ host: '127.0.0.2', port: 9100 });
    const s = containerServer('tserver', 'n2', 'base/n2', { host: '127.0.0.1', bump: 10002 }, ['--x=1']);
    expect(addressesOf(s)).toEqual({ role: 'tserver', rpcAddress: 'n2:9100', hostRpcAddress: '127.0.0.1:19102', webUrl: 'http://127.0.0.1:19002' });
    expect(s.argv.slice(0, 6)).toEqual(['tserver', '--rpc_bind_addresses=0.0.0.0:9100', '--server_broadcast_addresses=n2:9100', '--webserver_port=9000', '--webserver_interface=0.0.0.0', '--fs_data_dirs=/data/tserver']);
    expect(s.argv.at(-1)).toBe('--x=1');
    expect(s.dataDir).toBe(path.join('base/n2', 'tserver'));
  });

  it('lab driver base: a container server reads its console token from the secret in its node directory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lab-base-'));
    try {
      const file = writeLabSecret(dir, 'secret-text-1');
      expect(file).toBe(path.join(dir, LAB_SECRET_FILE));
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const s = containerServer('master', 'n0', dir, { host: '127.0.0.1', bump: 0 }, [`--cluster_secret_file=/data/${LAB_SECRET_FILE}`]);
      // /data/… in the container is the node directory on this machine.
      const token = containerConsoleToken(s);
      expect(token).toBeTruthy();
      expect(token).toBe(consoleTokenOf([`--cluster_secret_file=${file}`]));
      const none = containerServer('master', 'n0', dir, { host: '127.0.0.1', bump: 0 }, []);
      expect(containerConsoleToken(none)).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
