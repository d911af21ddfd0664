/**
 * A streaming ustar writer: just enough tar to send a Docker build context without gzip and with an
 * exact byte count for progress. Regular files and directories only (symlinks are resolved by the
 * caller); names longer than 100 bytes use the ustar prefix field (up to 255 bytes in all).
 */
import * as fs from 'node:fs';
import { Readable } from 'node:stream';
import { assert } from '../common';

const BLOCK = 512;

export interface TarEntry {
  /** Path inside the archive, '/'-separated, no leading '/'. */
  name: string;
  type: 'file' | 'dir';
  mode: number;
  /** Files: where the bytes come from and how many there must be. */
  source?: string;
  size?: number;
}

function octal(n: number, width: number): string {
  // width-1 octal digits then NUL, as tar readers expect.
  const s = n.toString(8);
  assert(s.length <= width - 1, `tar field overflow: ${n} in ${width} bytes`);
  return s.padStart(width - 1, '0') + '\0';
}

function splitName(name: string): { name: string; prefix: string } {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' };
  for (let i = name.indexOf('/'); i >= 0; i = name.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { name: rest, prefix };
  }
  throw new Error(`path too long for a ustar archive: ${name}`);
}

export function tarHeader(e: TarEntry): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const n = splitName(e.type === 'dir' && !e.name.endsWith('/') ? `${e.name}/` : e.name);
  h.write(n.name, 0, 100, 'utf8');
  h.write(octal(e.mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(e.type === 'file' ? (e.size ?? 0) : 0, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(e.type === 'file' ? '0' : '5', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(n.prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

/** Total archive size for these entries (for progress percentages). */
export function tarSize(entries: readonly TarEntry[]): number {
  let total = 2 * BLOCK;
  for (const e of entries) total += BLOCK + (e.type === 'file' ? Math.ceil((e.size ?? 0) / BLOCK) * BLOCK : 0);
  return total;
}

export function tarStream(entries: readonly TarEntry[], onBytes?: (sent: number) => void): Readable {
  async function* gen(): AsyncGenerator<Buffer> {
    let sent = 0;
    const emit = (b: Buffer): Buffer => {
      sent += b.length;
      onBytes?.(sent);
      return b;
    };
    for (const e of entries) {
      yield emit(tarHeader(e));
      if (e.type !== 'file') continue;
      let got = 0;
      for await (const chunk of fs.createReadStream(e.source!)) {
        const c = chunk as Buffer;
        got += c.length;
        // A file that grew since it was measured would corrupt the archive's framing.
        assert(got <= (e.size ?? 0), `${e.source} changed while being archived`);
        yield emit(c);
      }
      assert(got === e.size, `${e.source} changed while being archived (${got} != ${String(e.size)} bytes)`);
      const pad = (BLOCK - (got % BLOCK)) % BLOCK;
      if (pad) yield emit(Buffer.alloc(pad, 0));
    }
    yield emit(Buffer.alloc(2 * BLOCK, 0));
  }
  return Readable.from(gen(), { objectMode: false });
}
