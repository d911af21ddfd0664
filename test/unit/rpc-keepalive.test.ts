/**
 * The keepalive rule (rpc/keepalive.ts) tick by tick, on a made-up clock: pings after quiet, closes
 * only when a ping stayed unanswered for the timeout (counted from the ping, not from the last frame
 * heard), and judges nothing at a tick after this process's own event loop was held up.
 */
import { describe, expect, it } from 'vitest';
import { KeepaliveTicker, keepaliveStep, keepaliveTiming, type KeepaliveState } from '../../rpc/keepalive';

const T = { everyMs: 2_000, timeoutMs: 15_000 };

/** Ticks every 2 s from `fromMs` to `toMs` (inclusive); returns each tick's step. */
function run(s: KeepaliveState, fromMs: number, toMs: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (let now = fromMs; now <= toMs; now += T.everyMs) out.push([now, keepaliveStep(s, now, false, T)]);
  return out;
}

describe('rpc keepalive rule', () => {
  it('keepalive: timing from the flags — 0 is off, the timeout is at least one interval, 10 intervals without one', () => {
    expect(keepaliveTiming(0, 15_000)).toBeUndefined();
    expect(keepaliveTiming(undefined, 15_000)).toBeUndefined();
    expect(keepaliveTiming(2_000, 500)).toEqual({ everyMs: 2_000, timeoutMs: 2_000 });
    expect(keepaliveTiming(100, undefined)).toEqual({ everyMs: 100, timeoutMs: 1_000 });
  });

  it('keepalive: a busy connection never pings; a quiet one pings every tick and keeps the time of its first unanswered ping', () => {
    const s: KeepaliveState = { lastHeardMs: 0, pingSentMs: 0 };
    expect(keepaliveStep(s, 1_999, false, T)).toBe('none');
    expect(keepaliveStep(s, 2_000, false, T)).toBe('ping');
    expect(s.pingSentMs).toBe(2_000);
    expect(keepaliveStep(s, 4_000, false, T)).toBe('ping');
    expect(s.pingSentMs).toBe(2_000);
    s.lastHeardMs = 4_500; // the pong
    expect(keepaliveStep(s, 6_000, false, T)).toBe('none');
    expect(s.pingSentMs).toBe(0);
  });

  it('keepalive: the timeout counts from the unanswered ping, not from the last frame — a ping 3 s after the last frame, 14 s unanswered keeps the connection (17 s of quiet), 15 s closes it', () => {
    const s: KeepaliveState = { lastHeardMs: 0, pingSentMs: 0 };
    expect(keepaliveStep(s, 1_000, false, T)).toBe('none');
    expect(keepaliveStep(s, 3_000, false, T)).toBe('ping'); // the first ping, 3 s after the last frame
    const steps = run(s, 5_000, 17_000);
    expect(steps.every(([, st]) => st === 'ping'), JSON.stringify(steps)).toBe(true); // 14 s after the ping: still open
    expect(keepaliveStep(s, 18_000, false, T)).toBe('close'); // 15 s after the ping (18 s of quiet)
  });

  it('keepalive: a tick after this process stalled judges nothing and forgets the outstanding ping; judging starts afresh', () => {
    const s: KeepaliveState = { lastHeardMs: 0, pingSentMs: 2_000 };
    expect(keepaliveStep(s, 30_000, true, T)).toBe('none');
    expect(s.pingSentMs).toBe(0);
    expect(keepaliveStep(s, 32_000, false, T)).toBe('ping');
    expect(s.pingSentMs).toBe(32_000);
    expect(keepaliveStep(s, 46_000, false, T)).toBe('ping');
    expect(keepaliveStep(s, 47_000, false, T)).toBe('close');
  });

  it('keepalive: the ticker reports a stall only past two intervals since the previous tick', () => {
    const k = new KeepaliveTicker(0, 2_000);
    expect(k.stalled(2_000)).toBe(false);
    expect(k.stalled(6_000)).toBe(false);
    expect(k.stalled(10_001)).toBe(true);
    expect(k.stalled(12_000)).toBe(false);
  });
});
