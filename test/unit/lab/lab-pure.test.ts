/** The lab's pure pieces: partition drop lists, --node-flags parsing, spec checks, tar framing, docker frames. */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSpec, demuxDockerFrames, exitLine, linksBetween, serverExitSince, linksText, parseNodeFlags, partitionDropLists, planPartition, planProcessNodes, splitGroups, tarSize, tarStream, type TarEntry } from '../../../lab';

describe('lab pure parts', () => {
  const servers = [
    { node: 'n0', role: 'master' as const, rpcAddress: 'a:7100' },
    { node: 'n0', role: 'tserver' as const, rpcAddress: 'a:9100' },
    { node: 'n1', role: 'tserver' as const, rpcAddress: 'b:9100' },
    { node: 'n2', role: 'tserver' as const, rpcAddress: 'c:9100' },
  ];

  it('lab: partition drop lists cut the group off both ways and keep traffic inside each side', () => {
    const lists = partitionDropLists(servers, ['n0']);
    expect(lists.map((l) => l.peers)).toEqual(['b:9100,c:9100', 'b:9100,c:9100', 'a:7100,a:9100', 'a:7100,a:9100']);
    const two = partitionDropLists(servers, ['n0', 'n1']);
    expect(two[2]!.peers).toBe('c:9100'); // n1 still talks to n0
  });

  it('lab: an empty partition (heal) clears every drop list', () => {
    expect(partitionDropLists(servers, []).every((l) => l.peers === '')).toBe(true);
  });

  it('lab: a partial partition (--from) cuts only the listed links, both ways', () => {
    // n0 and n1 stop hearing each other; n2 still reaches both (Jepsen's bridge).
    const lists = partitionDropLists(servers, [], linksBetween(['n0'], ['n1']));
    expect(lists.map((l) => l.peers)).toEqual(['b:9100', 'b:9100', 'a:7100,a:9100', '']);
    // n0 against n1 and n2: the same drop lists as a whole-node cut of n0.
    const star = partitionDropLists(servers, [], linksBetween(['n0'], ['n2', 'n1']));
    expect(star.map((l) => l.peers)).toEqual(partitionDropLists(servers, ['n0']).map((l) => l.peers));
    // A node's own servers never drop each other.
    expect(partitionDropLists(servers, [], [['n0', 'n0']])[0]!.peers).toBe('');
  });

  it('lab: partition plans check node names, sides and sizes', () => {
    expect(linksBetween(['n2', 'n0'], ['n1'])).toEqual([['n0', 'n1'], ['n1', 'n2']]);
    expect(linksText(linksBetween(['n0'], ['n1', 'n2']))).toBe('n0–n1, n0–n2');
    expect(planPartition(['n1', 'n0', 'n1'], undefined, 3)).toEqual({ partitioned: ['n0', 'n1'], cutLinks: [] });
    expect(planPartition(['n0'], ['n1'], 3)).toEqual({ partitioned: [], cutLinks: [['n0', 'n1']] });
    expect(() => planPartition(['n0', 'n1', 'n2'], undefined, 3)).toThrow(/at least one node on the other side/);
    expect(() => planPartition([], undefined, 3)).toThrow(/at least one node/);
    expect(() => planPartition(['n0'], ['n0', 'n1'], 3)).toThrow(/n0 cannot be on both sides/);
    expect(() => planPartition(['n0'], ['n7'], 3)).toThrow(/unknown node 'n7'/);
    expect(() => planPartition(['n0'], [], 3)).toThrow(/--from needs at least one node/);
  });

  it('lab: --node-flags targets tservers by default and masters with /master', () => {
    const nf = parseNodeFlags('n0:TEST_a=1,n1:TEST_b={x,y},n0/master:TEST_c=3');
    expect(nf.tserver).toEqual({ n0: { TEST_a: '1' }, n1: { TEST_b: 'x,y' } });
    expect(nf.master).toEqual({ n0: { TEST_c: '3' } });
    expect(() => parseNodeFlags('TEST_a=1')).toThrow(/n0:FLAG=VALUE/);
  });

  it('lab: spec checks reject impossible clusters with a clear reason', () => {
    expect(() => defaultSpec({ baseDir: 'x', nodes: 2, masters: 3 })).toThrow(/needs at least 3 nodes/);
    expect(() => defaultSpec({ baseDir: 'x', nodes: 3, nodeFlags: { n5: {} } })).toThrow(/unknown node 'n5'/);
    expect(() => defaultSpec({ baseDir: 'x', nodes: 3, nodeMasterFlags: { n1: { a: '1' } } })).toThrow(/runs no master/);
  });

  it('lab: process addresses use 127.0.0.(base+i) with standard ports, or distinct ports on 127.0.0.1', () => {
    const alias = planProcessNodes({ nodes: 2, hostBase: 1, portOffset: 0 }, true);
    expect(alias.map((p) => `${p.host}:${p.tserverRpcPort}`)).toEqual(['127.0.0.1:9100', '127.0.0.2:9100']);
    const ports = planProcessNodes({ nodes: 2, hostBase: 1, portOffset: 0 }, false);
    expect(ports.map((p) => `${p.host}:${p.masterWebPort}`)).toEqual(['127.0.0.1:7000', '127.0.0.1:7001']);
  });

  it('lab: the supervisor splits its command line into one argv per server', () => {
    expect(splitGroups(['master', '--a=1', ':::', 'tserver', '--b=2'])).toEqual([['master', '--a=1'], ['tserver', '--b=2']]);
  });

  it('lab: a health wait finds the supervisor\'s exit line of its server at or after the server\'s start, in a log with Docker timestamps', () => {
    expect(exitLine('tserver', 1, null)).toBe('[supervisor] tserver exited with status 1');
    expect(exitLine('master', null, 'SIGKILL')).toBe('[supervisor] master killed by SIGKILL');
    const log = [
      `2026-12-05T00:45:50.100000000Z ${exitLine('tserver', null, 'SIGKILL')}`, // an earlier run, killed by the lab
      '2026-12-05T00:45:52.000000000Z [tserver] error: INVALID_ARGUMENT: unknown flag --no_such_flag',
      `2026-12-05T00:45:52.500000000Z ${exitLine('tserver', 1, null)}`,
      '2026-12-05T00:45:53.000000000Z [master] master started',
      `not-a-time ${exitLine('master', 2, null)}`,
      '',
    ].join('\n');
    const at = (t: string): number => Date.parse(`2026-12-05T00:45:${t}Z`);
    expect(serverExitSince(log, 'tserver', at('51.000'))).toBe('exited with status 1');
    // Started after that exit (SIGUSR2 again): nothing yet.
    expect(serverExitSince(log, 'tserver', at('52.600'))).toBeUndefined();
    // Before both: the first one found.
    expect(serverExitSince(log, 'tserver', at('50.000'))).toBe('killed by SIGKILL');
    // Another role's lines, the servers' own lines and untimed lines never count.
    expect(serverExitSince(log, 'master', 0)).toBeUndefined();
    expect(serverExitSince('[supervisor] tserver exited with status 1', 'tserver', 0)).toBeUndefined();
  });

  it('lab: docker frames are demultiplexed; plain text passes through', () => {
    const frame = (stream: number, text: string): Buffer => {
      const header = Buffer.from([stream, 0, 0, 0, 0, 0, 0, 0]);
      header.writeUInt32BE(Buffer.byteLength(text), 4);
      return Buffer.concat([header, Buffer.from(text)]);
    };
    expect(demuxDockerFrames(Buffer.concat([frame(1, 'out\n'), frame(2, 'err\n')]))).toBe('out\nerr\n');
    expect(demuxDockerFrames(Buffer.from('plain text here\n'))).toBe('plain text here\n');
  });

  it('lab: the tar writer produces an archive system tar lists and extracts byte for byte (long names too)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-tar-'));
    try {
      const src = path.join(dir, 'src.bin');
      const data = Buffer.alloc(1500, 7);
      fs.writeFileSync(src, data);
      const longName = `${'d'.repeat(80)}/${'e'.repeat(60)}/file.bin`;
      const entries: TarEntry[] = [
        { name: 'top', type: 'dir', mode: 0o755 },
        { name: 'top/a.bin', type: 'file', mode: 0o644, source: src, size: data.length },
        { name: longName, type: 'file', mode: 0o600, source: src, size: data.length },
      ];
      const chunks: Buffer[] = [];
      for await (const c of tarStream(entries)) chunks.push(c as Buffer);
      const tar = Buffer.concat(chunks);
      expect(tar.length).toBe(tarSize(entries));
      const tarFile = path.join(dir, 'x.tar');
      fs.writeFileSync(tarFile, tar);
      const out = path.join(dir, 'out');
      fs.mkdirSync(out);
      execFileSync('tar', ['-xf', tarFile, '-C', out]);
      expect(fs.readFileSync(path.join(out, 'top/a.bin')).equals(data)).toBe(true);
      expect(fs.readFileSync(path.join(out, longName)).equals(data)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
