import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  DbError, ErrorCode, Flags, HybridClock, ManualClock, defineFlag, htFrom, htEncode, htDecode, htLogical,
  htPhysicalMicros, htToString, parseFlagArgs, parseFlagList, flagAssignment, FlagTag, SeededRng,
} from '../../common';

describe('common: errors', () => {
  it('errors: every code is unique and equals its key', () => {
    const values = Object.values(ErrorCode);
    expect(new Set(values).size).toBe(values.length);
    for (const [k, v] of Object.entries(ErrorCode)) expect(v).toBe(k);
  });
  it('errors: wire form round-trips code, message and details', () => {
    const e = new DbError(ErrorCode.NOT_THE_LEADER, 'not leader', { leaderHint: '127.0.0.2:9100' });
    const back = DbError.fromWire(JSON.parse(JSON.stringify(e.toWire())));
    expect(back.code).toBe('NOT_THE_LEADER');
    expect(back.retryable).toBe(true);
    expect(back.details.leaderHint).toBe('127.0.0.2:9100');
    expect(DbError.fromWire({ code: 'NO_SUCH_CODE', message: 'x' }).code).toBe('INTERNAL');
  });
});

describe('common: hybrid time', () => {
  it('hybrid time: byte order equals numeric order and decode undoes encode', () => {
    const ht = fc.tuple(fc.bigInt({ min: 0n, max: (1n << 52n) - 1n }), fc.integer({ min: 0, max: 4095 })).map(([p, l]) => htFrom(p, l));
    fc.assert(fc.property(ht, ht, (a, b) => {
      expect(htDecode(htEncode(a))).toBe(a);
      const c = Buffer.compare(htEncode(a), htEncode(b));
      expect(Math.sign(c)).toBe(a < b ? -1 : a > b ? 1 : 0);
    }));
  });
  it('hybrid time: prints physical and logical parts', () => {
    const ht = htFrom(1_700_000_000_000_000n, 3);
    expect(htPhysicalMicros(ht)).toBe(1_700_000_000_000_000n);
    expect(htLogical(ht)).toBe(3);
    expect(htToString(ht)).toBe('{ physical: 1700000000000000, logical: 3 }');
  });
  it('hybrid clock: monotonic under any sequence of wall-clock steps and updates', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: -5_000_000, max: 5_000_000 }), fc.boolean()), { maxLength: 200 }), (steps) => {
      const clock = new ManualClock();
      const hc = new HybridClock(clock);
      let last = hc.now();
      for (const [delta, receive] of steps) {
        clock.setWallMicros(clock.nowMicros() + delta);
        if (receive) {
          const received = last + BigInt(Math.abs(delta));
          hc.update(received);
          const n = hc.now();
          expect(n > received).toBe(true);
          last = n;
        } else {
          const n = hc.now();
          expect(n > last).toBe(true);
          last = n;
        }
      }
    }));
  });
});

describe('common: flags', () => {
  const INT = defineFlag({ name: 'unit_test_int_flag', type: 'int', default: 7, help: 'test', tags: [FlagTag.runtime] });
  const STR = defineFlag({ name: 'unit_test_static_flag', type: 'string', default: 'a', help: 'test' });
  const T = defineFlag({ name: 'TEST_unit_test_flag', type: 'bool', default: false, help: 'test' });

  it('flags: --name=value parsing, positional args kept', () => {
    const { flags, positional } = parseFlagArgs(['--unit_test_int_flag=42', 'start', '--TEST_unit_test_flag']);
    expect(flags.get(INT)).toBe(42);
    expect(flags.get(T)).toBe(true);
    expect(positional).toEqual(['start']);
    expect(flags.isChanged('unit_test_int_flag')).toBe(true);
  });
  it('flags: unknown flag and bad value name the flag and what was expected', () => {
    expect(() => parseFlagArgs(['--no_such_flag_xyz=1'])).toThrow(/unknown flag --no_such_flag_xyz/);
    try {
      parseFlagArgs(['--unit_test_int_flag=abc']);
      expect.unreachable();
    } catch (e) {
      expect((e as DbError).code).toBe('INVALID_ARGUMENT');
      expect((e as DbError).message).toMatch(/unit_test_int_flag: expected an integer/);
    }
  });
  it('flags: run-time change of a non-runtime flag needs force', () => {
    const f = new Flags();
    expect(() => f.setAtRuntime('unit_test_static_flag', 'b')).toThrow(expect.objectContaining({ code: 'NOT_SAFE' }));
    f.setAtRuntime('unit_test_static_flag', 'b', true);
    expect(f.get(STR)).toBe('b');
    f.setAtRuntime('unit_test_int_flag', '9');
    expect(f.get(INT)).toBe(9);
  });
  it('flags: TEST_ flags are tagged test and hidden', () => {
    expect(T.tags).toContain('test');
    expect(T.tags).toContain('hidden');
  });
  it('flags: list form with braces for values holding commas', () => {
    expect(parseFlagList('a=1,b={x,y},c=3')).toEqual([['a', '1'], ['b', 'x,y'], ['c', '3']]);
    expect(() => parseFlagList('a=1,b')).toThrow(/has no '=value'/);
  });
  it('flags: one name=value of a pass-on option (a leading -- accepted, the value may hold = and newlines), else an error naming the option', () => {
    expect(flagAssignment('log_level=debug', '--server_flag')).toEqual({ name: 'log_level', value: 'debug' });
    expect(flagAssignment('--placement=a=b\nc', '--x')).toEqual({ name: 'placement', value: 'a=b\nc' });
    expect(flagAssignment('empty=', '--x')).toEqual({ name: 'empty', value: '' });
    expect(() => flagAssignment('durable_wal_write', '--tserver-flag')).toThrow(/--tserver-flag must look like name=value, got 'durable_wal_write'/);
    expect(() => flagAssignment('9lives=1', '--x')).toThrow(/must look like name=value/);
  });
});

describe('common: rng', () => {
  it('rng: the same seed gives the same sequence', () => {
    const a = new SeededRng(42);
    const b = new SeededRng(42);
    for (let i = 0; i < 100; i++) expect(a.next()).toBe(b.next());
    expect(new SeededRng(1).next()).not.toBe(new SeededRng(2).next());
  });
});

describe('common: TEST_clock_skew_ms', () => {
  it('clock skew: the process clock follows TEST_clock_skew_ms at start and at run time; the hybrid clock never goes back', async () => {
    const { skewableSystemClock } = await import('../../common/clock');
    const f = new Flags();
    f.setAtRuntime('TEST_clock_skew_ms', '5000');
    const c = skewableSystemClock(f);
    const hc = new HybridClock(c);
    const real = Date.now() * 1000;
    expect(c.nowMicros() - real).toBeGreaterThan(4_000_000);
    const ahead = hc.now();
    f.setAtRuntime('TEST_clock_skew_ms', '-2000');
    expect(c.nowMicros() - Date.now() * 1000).toBeLessThan(-1_000_000);
    expect(hc.now()).toBeGreaterThan(ahead);
  });
});

describe('common: log_level', () => {
  it('log_level: the server logger and every child (made before or after) follow the flag at run time', async () => {
    const { createLogger, followLogLevel } = await import('../../common/log');
    const { LOG_LEVEL } = await import('../../common/common-flags');
    const lines: string[] = [];
    const flags = new Flags();
    const log = createLogger({ name: 't', stream: { write: (s: string) => lines.push(s) } as unknown as NodeJS.WritableStream }).child({ uuid: 'u' });
    followLogLevel(log, () => flags.get(LOG_LEVEL), (l) => flags.onChange(LOG_LEVEL, l));
    const early = log.child({ tablet: 'a' });
    early.debug('hidden at info');
    flags.setAtRuntime('log_level', 'debug');
    early.debug('early child at debug');
    log.child({ tablet: 'b' }).debug('late child at debug');
    flags.setAtRuntime('log_level', 'warn');
    early.info('hidden at warn');
    log.warn('root at warn');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['early child at debug', 'late child at debug', 'root at warn']);
  });
});
