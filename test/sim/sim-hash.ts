/** Small deterministic hashes for the simulator's checkers (FNV-1a style, 32 bits). */
import type { Entry } from '../../raft';

export function mix(h: number, x: number): number {
  h = Math.imul(h ^ (x & 0xffff), 0x01000193) >>> 0;
  return Math.imul(h ^ (x >>> 16), 0x01000193) >>> 0;
}

/** Hash of the log prefix ending with `e`, given the hash of the prefix before it. */
export function chainHash(prev: number, e: Entry): number {
  let h = mix(prev ^ 0x811c9dc5, e.index);
  h = mix(h, e.term);
  h = mix(h, e.type === 'normal' ? 1 : e.type === 'noop' ? 2 : 3);
  for (let i = 0; i < e.data.length; i++) h = mix(h, e.data[i]!);
  return h;
}

export function encodeU32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0);
  return b;
}

export function decodeU32(b: Uint8Array): number {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0);
}
