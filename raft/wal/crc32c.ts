/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of WAL records and metadata
 * files. Table-driven, slicing by 8: eight 256-entry tables let the inner loop consume 8 bytes per
 * step, which keeps checksumming off the profile of the append path.
 */
const POLY_REFLECTED = 0x82f63b78;
const TABLES: Int32Array[] = buildTables();

function buildTables(): Int32Array[] {
  const t0 = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY_REFLECTED : c >>> 1;
    t0[n] = c;
  }
  const tables = [t0];
  for (let s = 1; s < 8; s++) {
    const prev = tables[s - 1]!;
    const t = new Int32Array(256);
    // Table s advances a byte through s further zero bytes.
    for (let n = 0; n < 256; n++) t[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    tables.push(t);
  }
  return tables;
}

/**
 * CRC-32C of `data[start, end)`, continuing from `crc` (pass the previous result to checksum data
 * in pieces; 0 to start). Returns an unsigned 32-bit integer.
 */
export function crc32c(data: Uint8Array, crc = 0, start = 0, end = data.length): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
  let c = ~crc;
  let i = start;
  const end8 = start + ((end - start) & ~7);
  while (i < end8) {
    const lo = c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24));
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[data[i + 4]!]! ^
      t2[data[i + 5]!]! ^
      t1[data[i + 6]!]! ^
      t0[data[i + 7]!]!;
    i += 8;
  }
  while (i < end) c = (c >>> 8) ^ t0[(c ^ data[i++]!) & 0xff]!;
  return ~c >>> 0;
}
