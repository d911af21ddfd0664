/**
 * Running a command inside a lab container (docker exec), bounded in time and output: the docker
 * driver reads process states, signals servers and reads consoles of cut-off nodes this way.
 */
import type Docker from 'dockerode';
import { DbError, ErrorCode } from '../common';
import { demuxDockerFrames } from './docker-frames';

export const EXEC_TIMEOUT_MS = 30_000;
/** Output beyond this is dropped (the command still runs to its end). */
const EXEC_OUTPUT_BYTES_MAX = 4 * 1024 * 1024;

export interface ExecResult {
  exitCode: number;
  output: string;
}

/** Runs `cmd` in `container` (named `where` in errors); rejects with TIMED_OUT after timeoutMs. */
export async function execInContainer(container: Docker.Container, where: string, cmd: string[], timeoutMs = EXEC_TIMEOUT_MS): Promise<ExecResult> {
  const ex = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await ex.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.destroy();
      reject(new DbError(ErrorCode.TIMED_OUT, `exec in ${where} did not finish within ${timeoutMs} ms: ${cmd.join(' ')}`));
    }, timeoutMs);
    stream.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes <= EXEC_OUTPUT_BYTES_MAX) chunks.push(c);
    });
    stream.on('end', () => {
      clearTimeout(timer);
      resolve();
    });
    stream.on('error', (e: Error) => {
      clearTimeout(timer);
      reject(e);
    });
  });
  const info = await ex.inspect();
  return { exitCode: info.ExitCode ?? -1, output: demuxDockerFrames(Buffer.concat(chunks)) };
}
