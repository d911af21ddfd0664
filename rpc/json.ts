/** JSON for consoles and error bodies: bigint (HybridTime, 64-bit ids) as decimal strings, bytes as hex. */
function replacer(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  if (v instanceof Map) return Object.fromEntries(v);
  if (v instanceof Set) return [...v];
  return v;
}

export function toJson(v: unknown, space?: number): string {
  // Buffers have toJSON(), which runs before the replacer sees them; turn them into plain Uint8Array views first.
  return JSON.stringify(v, function (this: unknown, key: string, value: unknown) {
    const holder = this as Record<string, unknown> | undefined;
    const raw = holder && key !== '' ? holder[key] : value;
    return replacer(key, raw instanceof Uint8Array ? raw : value);
  }, space) ?? 'null';
}
