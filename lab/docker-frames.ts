/**
 * Docker multiplexes a non-TTY container's stdout and stderr into frames: 8-byte header
 * [stream, 0, 0, 0, size uint32 BE] then `size` bytes. Logs and exec output come in this form.
 */
export function demuxDockerFrames(buf: Buffer): string {
  const parts: Buffer[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const type = buf[i]!;
    const size = buf.readUInt32BE(i + 4);
    // Not a frame header: the stream was not multiplexed (a TTY container); take it as plain text.
    if (type > 2 || buf[i + 1] !== 0 || buf[i + 2] !== 0 || buf[i + 3] !== 0) return buf.toString('utf8');
    parts.push(buf.subarray(i + 8, Math.min(buf.length, i + 8 + size)));
    i += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}
