/**
 * The environment server processes start with (common/server-env.ts): glibc's malloc keeps large
 * freed blocks for reuse, unless the launcher's own environment says otherwise.
 */
import { describe, expect, it } from 'vitest';
import { SERVER_MALLOC_ENV, serverEnv } from '../../common/server-env';

describe('server environment', () => {
  it('server env: malloc keeps blocks below 64 MiB in the heap and trims beyond 1 GiB; the launcher\'s variables are kept and win', () => {
    const env = serverEnv({ PATH: '/bin', MALLOC_TRIM_THRESHOLD_: '5' });
    expect(env['PATH']).toBe('/bin');
    expect(env['MALLOC_TRIM_THRESHOLD_']).toBe('5');
    expect(env['MALLOC_MMAP_THRESHOLD_']).toBe(String(64 * 1024 * 1024));
    expect(env['MALLOC_TOP_PAD_']).toBe(String(64 * 1024 * 1024));
    expect(serverEnv({})).toEqual(SERVER_MALLOC_ENV);
    expect(Number(SERVER_MALLOC_ENV['MALLOC_TRIM_THRESHOLD_'])).toBe(2 ** 30);
  });
});
