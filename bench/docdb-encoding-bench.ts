/**
 * DocDB key-encoding figures (issue 4, "Tests and figures": encoded keys per second). Pure CPU, no
 * I/O. The key shape is the common one: a DocKey with one hashed int64 and one range string, then
 * the versioned SubDocKey of one of its columns (DocKey + 'K' id + '#' + DocHybridTime).
 *
 * Called from bench/docdb-bench.ts; also runs alone: `node dist/bench/docdb-encoding-bench.js [--keys=N]`.
 */
import { decodeDocHybridTimeFromEnd, decodeSubDocKey, encodeDocKey, encodeSubDocKeyFull, makeDocKey, partitionHash, type DocKey } from '../docdb';

export interface EncodingFigures {
  docKeysPerSec: number;
  docKeysWithHashPerSec: number;
  subDocKeysWithTimePerSec: number;
  rowToVersionKeysPerSec: number;
  decodeSubDocKeysPerSec: number;
  splitTimeFromEndPerSec: number;
}

const WARMUP_FRACTION = 0.1;

function measure(label: string, n: number, print: (s: string) => void, fn: (i: number) => number): number {
  let sink = 0;
  const warm = Math.max(1, Math.floor(n * WARMUP_FRACTION));
  for (let i = 0; i < warm; i++) sink += fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) sink += fn(i);
  const ms = performance.now() - t0;
  const perSec = Math.round((n * 1000) / ms);
  // `sink` keeps the work observable so the JIT cannot drop it.
  print(`  ${label.padEnd(52)} ${perSec.toLocaleString('en-US').padStart(12)}/s  (${n} in ${ms.toFixed(0)} ms, checksum ${sink % 1000})`);
  return perSec;
}

export function runEncodingBench(keys = 300_000, print: (s: string) => void = console.log): EncodingFigures {
  // Inputs built up front so the loops measure encoding only.
  const KINDS = 1024;
  const docKeys: DocKey[] = [];
  for (let i = 0; i < KINDS; i++) docKeys.push(makeDocKey([BigInt(i * 7919)], [`user-${i}-name`]));
  const encoded = docKeys.map((k) => encodeDocKey(k));
  const baseHt = 1_700_000_000_000_000n << 12n;
  const versioned = encoded.map((dk, i) => encodeSubDocKeyFull({ docKey: dk, column: 3, ht: baseHt + BigInt(i), writeId: i & 7 }));

  print(`encoding (DocKey = 1 hashed int64 + 1 range string, ~${encoded[1].length} bytes; versioned SubDocKey ~${versioned[1].length} bytes):`);
  const docKeysPerSec = measure('encodeDocKey (hash precomputed)', keys, print, (i) => encodeDocKey(docKeys[i & (KINDS - 1)]).length);
  const docKeysWithHashPerSec = measure('partitionHash + encodeDocKey', keys, print, (i) => {
    const k = docKeys[i & (KINDS - 1)];
    return encodeDocKey({ hash: partitionHash(k.hashed), hashed: k.hashed, range: k.range }).length;
  });
  const subDocKeysWithTimePerSec = measure('SubDocKey + time from an encoded DocKey', keys, print, (i) =>
    encodeSubDocKeyFull({ docKey: encoded[i & (KINDS - 1)], column: 3, ht: baseHt + BigInt(i), writeId: i & 7 }).length,
  );
  const rowToVersionKeysPerSec = measure('DocKey -> versioned SubDocKey (both steps)', keys, print, (i) =>
    encodeSubDocKeyFull({ docKey: encodeDocKey(docKeys[i & (KINDS - 1)]), column: 3, ht: baseHt, writeId: 0 }).length,
  );
  const decodeSubDocKeysPerSec = measure('decodeSubDocKey (full parse)', keys, print, (i) => decodeSubDocKey(versioned[i & (KINDS - 1)]).subKeyEnd);
  const splitTimeFromEndPerSec = measure('decodeDocHybridTimeFromEnd', keys, print, (i) => decodeDocHybridTimeFromEnd(versioned[i & (KINDS - 1)]).writeId);
  return { docKeysPerSec, docKeysWithHashPerSec, subDocKeysWithTimePerSec, rowToVersionKeysPerSec, decodeSubDocKeysPerSec, splitTimeFromEndPerSec };
}

function argNumber(name: string, dflt: number): number {
  const a = process.argv.find((s) => s.startsWith(`--${name}=`));
  const v = a === undefined ? dflt : Number(a.slice(name.length + 3));
  return Number.isFinite(v) && v > 0 ? v : dflt;
}

if (require.main === module) {
  runEncodingBench(argNumber('keys', 300_000));
}
