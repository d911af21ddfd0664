/**
 * --uv_threadpool_size sizes the server process's libuv pool: the threads a process has after its
 * first pool task differ by exactly the difference of the flag values.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { expect, it } from 'vitest';

const COMMANDS = path.resolve(__dirname, '../../dist/cli/server-commands.js');

function threadsWith(args: string[]): number {
  const script = `
    const fs = require('node:fs');
    require(${JSON.stringify(COMMANDS)}).applyThreadpoolSize(${JSON.stringify(args)});
    fs.readFile('/proc/self/stat', () => process.stdout.write(String(fs.readdirSync('/proc/self/task').length)));
  `;
  const env = { ...process.env };
  delete env['UV_THREADPOOL_SIZE'];
  return Number(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' }));
}

it('--uv_threadpool_size sets the libuv pool size of the process (default 1)', () => {
  const one = threadsWith([]);
  const three = threadsWith(['--uv_threadpool_size=3']);
  const six = threadsWith(['--uv_threadpool_size=6']);
  expect(three - one).toBe(2);
  expect(six - one).toBe(5);
  // A bad value is left for the server's own flag parse to report; the pool keeps libuv's default (4).
  expect(threadsWith(['--uv_threadpool_size=0']) - one).toBe(3);
});
