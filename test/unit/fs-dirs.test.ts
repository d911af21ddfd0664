/**
 * A server's data directory at start: directories that cannot be made fail at once with one IO_ERROR
 * naming them, and servers started with such a data directory exit with status 1 and that one line
 * instead of hanging; a damaged identity file is CORRUPTION naming the file.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DbError } from '../../common/errors';
import { makeDirs, writeFileDurably, writeFileDurablyAsync } from '../../common/fs-dirs';
import { loadOrCreateUuid } from '../../common/server-identity';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-fs-dirs-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function dbError(f: () => void): DbError {
  try {
    f();
  } catch (e) {
    if (e instanceof DbError) return e;
    throw e;
  }
  throw new Error('expected a DbError, nothing was thrown');
}

// Node's own recursive mkdir loops forever on these; only Linux has /proc.
const hasProc = fs.existsSync('/proc/self');

describe('writeFileDurably', () => {
  it('replaces a file whole (sync and async, overlapping saves too) and leaves no temporary file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-durable-'));
    try {
      writeFileDurably(dir, 'f.json', 'one');
      expect(fs.readFileSync(path.join(dir, 'f.json'), 'utf8')).toBe('one');
      await Promise.all(['two', 'three', 'four'].map((t) => writeFileDurablyAsync(dir, 'f.json', t.repeat(10_000))));
      expect(['two', 'three', 'four'].map((t) => t.repeat(10_000))).toContain(fs.readFileSync(path.join(dir, 'f.json'), 'utf8'));
      expect(fs.readdirSync(dir)).toEqual(['f.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('makeDirs', () => {
  it('makes a directory and its missing parents, and accepts one that exists', () => {
    const d = path.join(tmp, 'a', 'b', 'c');
    makeDirs(d);
    expect(fs.statSync(d).isDirectory()).toBe(true);
    makeDirs(d);
    makeDirs(path.join(tmp, 'a'));
    expect(fs.readdirSync(path.join(tmp, 'a'))).toEqual(['b']);
  });

  it('names the component that is a file', () => {
    const file = path.join(tmp, 'plain-file');
    fs.writeFileSync(file, 'x');
    const e = dbError(() => makeDirs(path.join(file, 'data'), 'data directory'));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toBe(`cannot create data directory '${path.join(file, 'data')}': '${file}' exists and is not a directory`);
    expect(dbError(() => makeDirs(file)).message).toContain('exists and is not a directory');
  });

  it('names a dangling symbolic link on the way', () => {
    const link = path.join(tmp, 'dangling');
    fs.symlinkSync(path.join(tmp, 'no-such-target'), link);
    const e = dbError(() => makeDirs(path.join(link, 'data'), 'data directory'));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toBe(`cannot create data directory '${path.join(link, 'data')}': '${link}' is a symbolic link to a missing target`);
  });

  it.skipIf(!hasProc)('fails at once under /proc, where a parent exists but refuses new entries (skipped: no /proc here)', () => {
    const e = dbError(() => makeDirs('/proc/tessera-nope/data', 'data directory'));
    expect(e.code).toBe('IO_ERROR');
    expect(e.message).toBe("cannot create data directory '/proc/tessera-nope/data': ENOENT making '/proc/tessera-nope'");
  });
});

describe('servers with a data directory that cannot be made', () => {
  const bad = () => path.join(tmp, 'plain-file', 'data');
  for (const [kind, extra] of [
    ['master', ['--rpc_bind_addresses=127.0.0.1:0', '--webserver_port=0']],
    ['tserver', ['--rpc_bind_addresses=127.0.0.1:0', '--webserver_port=0', '--tserver_master_addrs=127.0.0.1:1']],
  ] as const) {
    it(`${kind} exits with status 1 and one IO_ERROR line`, () => {
      fs.writeFileSync(path.join(tmp, 'plain-file'), 'x');
      const r = spawnSync(process.execPath, [CLI, kind, `--fs_data_dirs=${bad()}`, ...extra], { encoding: 'utf8', timeout: 30_000 });
      expect(r.signal).toBeNull();
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toBe(`error: IO_ERROR: cannot create data directory '${bad()}': '${path.join(tmp, 'plain-file')}' exists and is not a directory`);
    });
  }
});

describe('server identity (DATA/instance)', () => {
  it('is created once and read back; a damaged file is CORRUPTION naming it', () => {
    const d = path.join(tmp, 'identity');
    makeDirs(d);
    const uuid = loadOrCreateUuid(d);
    expect(uuid).toMatch(/^[0-9a-f]{32}$/);
    expect(loadOrCreateUuid(d)).toBe(uuid);
    const file = path.join(d, 'instance');
    for (const [text, why] of [
      ['{bad', 'is not this server\'s identity'],
      ['null', 'has no uuid'],
      ['{"uuid":""}', 'has no uuid'],
    ] as const) {
      fs.writeFileSync(file, text);
      const e = dbError(() => loadOrCreateUuid(d));
      expect(e.code).toBe('CORRUPTION');
      expect(e.message).toContain(`${file} ${why}`);
    }
  });
});
