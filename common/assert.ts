/**
 * Invariant checks. A failed assertion is a bug in tessera, never an operating error:
 * it throws an AssertionError that nothing may catch and recover from (see docs/conventions.md).
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function assertNever(value: never, message = 'unexpected value'): never {
  throw new AssertionError(`${message}: ${String(value)}`);
}
