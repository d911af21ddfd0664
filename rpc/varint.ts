/** Protobuf base-128 varints for the hand-written encoders (non-negative safe integers). */

/** Bytes the varint of `n` takes. */
export function varintLen(n: number): number {
  let l = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    l++;
  }
  return l;
}

/** Write the varint of `n` at `pos`; returns the position after it. */
export function putVarint(b: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    b[pos++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  b[pos++] = n;
  return pos;
}
