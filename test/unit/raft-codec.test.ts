import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeMessage, encodeMessage } from '../../raft/message-codec';
import type { Entry, Message } from '../../raft/types';
import { NodeId } from '../../common/ids';
import { DbError } from '../../common/errors';

const nodeId = fc.string({ maxLength: 40 }).map(NodeId);
const u = fc.nat({ max: Number.MAX_SAFE_INTEGER });
const bytes = fc.uint8Array({ maxLength: 64 });
const entry: fc.Arbitrary<Entry> = fc.record({ term: u, index: u, type: fc.constantFrom('normal' as const, 'noop' as const, 'confChange' as const), data: bytes });
const conf = fc.record({ voters: fc.array(nodeId, { maxLength: 5 }), learners: fc.array(nodeId, { maxLength: 3 }) });
const hdr = { from: nodeId, to: nodeId, term: u };
const hint = fc.integer({ min: -(2 ** 51), max: 2 ** 51 });

const message: fc.Arbitrary<Message> = fc.oneof(
  fc.record({ type: fc.constant('append' as const), ...hdr, prevIndex: u, prevTerm: u, entries: fc.array(entry, { maxLength: 8 }), commit: u, leaseMs: fc.double({ noNaN: true }), noAck: fc.constant(true) }, { requiredKeys: ['type', 'from', 'to', 'term', 'prevIndex', 'prevTerm', 'entries', 'commit'] }),
  fc.record({ type: fc.constant('appendResp' as const), ...hdr, index: u, reject: fc.boolean(), rejectHint: hint, rejectTermHint: hint }, { requiredKeys: ['type', 'from', 'to', 'term', 'index', 'reject', 'rejectHint'] }),
  fc.record({ type: fc.constant('heartbeat' as const), ...hdr, commit: u, context: bytes, leaseTick: fc.double({ noNaN: true }) }, { requiredKeys: ['type', 'from', 'to', 'term', 'commit'] }),
  fc.record({ type: fc.constant('heartbeatResp' as const), ...hdr, context: bytes, leaseTick: fc.double({ noNaN: true }) }, { requiredKeys: ['type', 'from', 'to', 'term'] }),
  fc.record({ type: fc.constant('vote' as const), ...hdr, lastIndex: u, lastTerm: u, pre: fc.boolean(), transfer: fc.boolean() }),
  fc.record({ type: fc.constant('voteResp' as const), ...hdr, reject: fc.boolean(), pre: fc.boolean() }),
  fc.record({ type: fc.constant('snapshot' as const), ...hdr, snapshot: fc.record({ meta: fc.record({ index: u, term: u, conf }), data: fc.uint8Array({ maxLength: 300 }) }) }),
  fc.record({ type: fc.constant('timeoutNow' as const), ...hdr }),
);

describe('raft message codec', () => {
  it('raft codec: every message variant round-trips exactly', () => {
    fc.assert(
      fc.property(message, (m) => {
        expect(decodeMessage(encodeMessage(m))).toEqual(m);
      }),
      { numRuns: 2000 },
    );
  });

  it('raft codec: truncated or corrupted input is rejected with a DbError, never a crash', () => {
    fc.assert(
      fc.property(message, fc.nat(), fc.nat({ max: 255 }), (m, cut, flip) => {
        const enc = encodeMessage(m);
        const truncated = enc.subarray(0, cut % enc.length);
        expect(() => decodeMessage(truncated)).toThrow(DbError);
        const bad = enc.slice();
        const i = cut % bad.length;
        bad[i] = bad[i]! ^ (flip | 1);
        try {
          decodeMessage(bad);
        } catch (e) {
          expect(e).toBeInstanceOf(DbError);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('raft codec: decoded entry data does not alias the frame buffer (a plain Uint8Array or a Buffer, as the transport delivers)', () => {
    const m: Message = { type: 'append', from: NodeId('a'), to: NodeId('b'), term: 2, prevIndex: 1, prevTerm: 1, commit: 1, entries: [{ term: 2, index: 2, type: 'normal', data: new Uint8Array([1, 2, 3]) }] };
    for (const frame of [new Uint8Array(encodeMessage(m)), Buffer.from(encodeMessage(m))]) {
      const dec = decodeMessage(frame);
      frame.fill(0);
      expect(dec.type === 'append' && Array.from(dec.entries[0]!.data)).toEqual([1, 2, 3]);
    }
  });

  it('raft codec: node ids (cached per id) round-trip in any UTF-8, and an id of 16 KiB or more is refused', () => {
    const m = (from: string, to: string): Message => ({ type: 'heartbeatResp', from: NodeId(from), to: NodeId(to), term: 3 });
    for (const [a, b] of [['ünï-ç', 'a'], ['a', 'ünï-ç'], ['x'.repeat(5000), '日本']]) {
      const first = encodeMessage(m(a!, b!));
      expect(encodeMessage(m(a!, b!))).toEqual(first);
      expect(decodeMessage(first)).toEqual(m(a!, b!));
    }
    const long = 'é'.repeat(8192); // 16,384 bytes of UTF-8
    expect(() => encodeMessage(m(long, 'a'))).toThrow(DbError);
    expect(() => encodeMessage(m('a', long))).toThrow(/node id too long/);
  });
});
