/**
 * The benchmark's CPU profile tables (bench/profiling/cpu-profile-summary.ts): a hand-built .cpuprofile whose
 * sample times are known, so busy/idle, self time by area, top functions and tessera's inclusive
 * times (recursion counted once) have exact expected values.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { areaOf, parseCpuProfile, renderProfileSummary, summarizeCpuProfile, summarizeProfileFile, type CpuProfile } from '../../bench/profiling/cpu-profile-summary';

const REPO = 'file:///repo/tessera';
const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber, scriptId: '0', columnNumber: 0 });

/**
 * root ─┬─ (idle)                                 2
 *       ├─ processPass (dist/raft) ─┬─ handleReady (dist/raft) ── writev (native)   self 1, writev 2
 *       │                          └─ processPass (recursion) ── encode (protobufjs)   encode 5
 *       ├─ (garbage collector)                                                         1
 *       ├─ addChunk (node:internal)                                                    1
 *       └─ (anonymous, generated, no url, line 2)                                      1
 */
function profile(): CpuProfile {
  const nodes = [
    { id: 1, callFrame: frame('(root)', '', -1), children: [2, 3, 8, 9, 10] },
    { id: 2, callFrame: frame('(idle)', '', -1) },
    { id: 3, callFrame: frame('processPass', `${REPO}/dist/raft/raft-group.js`, 341), children: [4, 6] },
    { id: 4, callFrame: frame('handleReady', `${REPO}/dist/raft/raft-group.js`, 357), children: [5] },
    { id: 5, callFrame: frame('writev', '', -1) },
    { id: 6, callFrame: frame('processPass', `${REPO}/dist/raft/raft-group.js`, 341), children: [7] },
    { id: 7, callFrame: frame('encode', `${REPO}/node_modules/protobufjs/src/encoder.js`, 10) },
    { id: 8, callFrame: frame('(garbage collector)', '', -1) },
    { id: 9, callFrame: frame('addChunk', 'node:internal/streams/readable', 548) },
    { id: 10, callFrame: frame('', '', 1) },
  ];
  // Sample i lasts timeDeltas[i + 1] µs (the encode sample, index 4, lasts 5 ms); the last one until endTime.
  const samples = [2, 5, 5, 3, 7, 8, 9, 10, 2];
  const timeDeltas = [0, 1000, 1000, 1000, 1000, 5000, 1000, 1000, 1000];
  const startTime = 1_000_000;
  const lastStamp = startTime + timeDeltas.reduce((a, b) => a + b, 0);
  return { nodes, samples, timeDeltas, startTime, endTime: lastStamp + 1000 };
}

describe('bench CPU profile summary', () => {
  it('splits the main thread into idle and busy time and the busy time into areas, with DevTools sample timing', () => {
    const s = summarizeCpuProfile(profile());
    expect(s.wallMs).toBe(13);
    expect(s.idleMs).toBe(2);
    expect(s.busyMs).toBe(11);
    const area = (name: string) => s.areas.find((a) => a.name === name)?.ms;
    expect(area('library protobufjs')).toBe(5);
    expect(area('native calls from JavaScript (socket and file syscalls, Buffer, crypto)')).toBe(2);
    expect(area('tessera raft/')).toBe(1);
    expect(area('garbage collection')).toBe(1);
    expect(area('Node.js internals (streams, net, buffer, timers)')).toBe(1);
    expect(area('generated JavaScript (no file: protobufjs codecs, eval)')).toBe(1);
    expect(s.areas.reduce((a, r) => a + r.ms, 0)).toBe(s.busyMs);
    expect(s.areas[0]!.name).toBe('library protobufjs');
    expect(s.areas[0]!.shareOfBusy).toBeCloseTo(5 / 11, 10);
  });

  it('ranks functions by self time and tessera functions by inclusive time, a recursive one counted once per sample', () => {
    const s = summarizeCpuProfile(profile());
    expect(s.selfTop[0]).toMatchObject({ name: 'encode', where: 'protobufjs/src/encoder.js:11', ms: 5 });
    expect(s.selfTop[1]).toMatchObject({ name: 'writev', where: '', ms: 2 });
    expect(s.selfTop.find((r) => r.name === '(idle)')).toBeUndefined();
    expect(s.selfTop.find((r) => r.name === '(anonymous)')).toMatchObject({ where: 'generated:2', ms: 1 });
    // processPass: its own 1 + handleReady's writev 2 + the nested processPass's encode 5 (not twice).
    expect(s.inclusiveTop).toEqual([
      { name: 'processPass', where: 'raft/raft-group.js:342', ms: 8, shareOfBusy: 8 / 11 },
      { name: 'handleReady', where: 'raft/raft-group.js:358', ms: 2, shareOfBusy: 2 / 11 },
    ]);
    expect(summarizeCpuProfile(profile(), 1).selfTop.length).toBe(1);
  });

  it('renders the three tables and reads a profile file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-prof-'));
    try {
      const f = path.join(dir, 'x.cpuprofile');
      fs.writeFileSync(f, JSON.stringify(profile()));
      const { summary, markdown } = summarizeProfileFile(f);
      expect(summary.busyMs).toBe(11);
      expect(markdown).toContain('| library protobufjs | 5 | 45.5 % |');
      expect(markdown).toContain('| writev | native | 2 | 18.2 % |');
      expect(markdown).toContain('| processPass | raft/raft-group.js:342 | 8 | 72.7 % |');
      expect(markdown).toContain('Profile `x.cpuprofile`: 0.0 s of the main thread, busy 11 ms');
      expect(renderProfileSummary(summary, 'T')).toMatch(/^### T\n/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what is not a V8 CPU profile with a clear error', () => {
    expect(() => parseCpuProfile('{', 'a.cpuprofile')).toThrow(/a\.cpuprofile: not JSON/);
    expect(() => parseCpuProfile('{"nodes":[]}', 'b')).toThrow(/b: not a V8 CPU profile/);
    expect(() => parseCpuProfile(JSON.stringify({ ...profile(), timeDeltas: [0] }), 'c')).toThrow(/c: 9 samples but 1 time deltas/);
    expect(() => parseCpuProfile(JSON.stringify({ ...profile(), nodes: [{ id: 1 }] }), 'd')).toThrow(/d: malformed node/);
  });

  it('names areas by folder, package (scoped too) and kind of frame', () => {
    expect(areaOf(frame('f', `${REPO}/dist/docdb/intents-db.js`))).toBe('tessera docdb/');
    expect(areaOf(frame('f', `${REPO}/node_modules/@scope/pkg/index.js`))).toBe('library @scope/pkg');
    expect(areaOf(frame('f', `${REPO}/node_modules/ws/lib/sender.js`))).toBe('library ws');
    expect(areaOf(frame('(program)', '', -1))).toBe('V8 and native code outside JavaScript (program)');
    expect(areaOf(frame('f', '/somewhere/else.js'))).toBe('other');
  });
});
