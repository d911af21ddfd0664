import { describe, expect, it } from 'vitest';
import { crc32c } from '../../raft/wal/crc32c';

describe('crc32c', () => {
  it('wal: crc32c matches the standard check value and RFC 3720 vectors', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('wal: crc32c in pieces equals crc32c of the whole, at every split point and alignment', () => {
    const data = Uint8Array.from({ length: 67 }, (_, i) => (i * 131 + 7) & 0xff);
    const whole = crc32c(data);
    for (let cut = 0; cut <= data.length; cut++) {
      expect(crc32c(data, crc32c(data, 0, 0, cut), cut, data.length)).toBe(whole);
    }
    // A sub-range equals the checksum of a copy of it (the 8-byte fast path must not depend on alignment).
    for (let s = 0; s < 9; s++) expect(crc32c(data, 0, s, s + 40)).toBe(crc32c(data.slice(s, s + 40)));
  });

  it('wal: crc32c detects every single-bit flip of a record-sized buffer', () => {
    const data = Uint8Array.from({ length: 48 }, (_, i) => (i * 37) & 0xff);
    const base = crc32c(data);
    for (let bit = 0; bit < data.length * 8; bit++) {
      const copy = data.slice();
      copy[bit >> 3]! ^= 1 << (bit & 7);
      expect(crc32c(copy)).not.toBe(base);
    }
  });
});
