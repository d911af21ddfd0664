/**
 * Where WebSocket frame boundaries fall in the bytes a connection received (RFC 6455 §5.2 headers:
 * 2 bytes, a 2- or 8-byte extended length, a 4-byte mask key when masked, then the payload). The RPC
 * server feeds it every chunk its socket reads, to tell a connection idle between frames from one
 * stuck in the middle of a frame (a truncated frame: rpc_frame_timeout_ms). Pure; it only counts.
 */
export class FrameBoundaryTracker {
  /** Header bytes of the frame being read (at most 14). */
  private header: number[] = [];
  /** Payload bytes of the current frame still to come (-1: reading a header). */
  private payloadLeft = -1;

  /** True when the bytes fed so far end inside a frame. */
  get midFrame(): boolean {
    return this.header.length > 0 || this.payloadLeft > 0;
  }

  feed(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, chunk.length - i);
        this.payloadLeft -= n;
        i += n;
        continue;
      }
      this.header.push(chunk[i]!);
      i++;
      const need = headerLength(this.header);
      if (need !== undefined && this.header.length === need) {
        this.payloadLeft = payloadLength(this.header);
        this.header = [];
      }
    }
  }
}

/** The whole header's length once its first two bytes are known. */
function headerLength(h: readonly number[]): number | undefined {
  if (h.length < 2) return undefined;
  const len7 = h[1]! & 0x7f;
  const mask = (h[1]! & 0x80) !== 0 ? 4 : 0;
  return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + mask;
}

function payloadLength(h: readonly number[]): number {
  const len7 = h[1]! & 0x7f;
  if (len7 < 126) return len7;
  if (len7 === 126) return (h[2]! << 8) | h[3]!;
  // 64-bit length: beyond 2^53 no socket delivers it anyway; the server's maxPayload closes it first.
  let n = 0;
  for (let k = 2; k < 10; k++) n = n * 256 + h[k]!;
  return n;
}
