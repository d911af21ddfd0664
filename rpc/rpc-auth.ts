/**
 * The cluster secret's challenge on every RPC connection (docs/security.md). The server puts a fresh
 * random nonce in its WebSocket upgrade response (AUTH_NONCE_HEADER); the client's first message is
 * a text frame `{"v":1,"identity":…,"mac":…}` with mac = HMAC-SHA256(secret, label ‖ nonce ‖ identity),
 * pipelined ahead of its queued calls, so authenticating costs no extra round trip. The secret never
 * crosses the wire, and a recorded answer is worthless on another connection (another nonce). The
 * server handles no frame before a valid answer: a call sent without one is answered UNAUTHENTICATED,
 * and the connection is closed with CLOSE_UNAUTHENTICATED. One-way: the client does not check the
 * server (TLS's job, docs/security.md).
 */
import * as crypto from 'node:crypto';
import type { ClusterSecrets } from './cluster-secret';

export const AUTH_NONCE_HEADER = 'x-tessera-auth-nonce';
/** WebSocket close code (application range) of a connection refused for want of the secret. */
export const CLOSE_UNAUTHENTICATED = 4401;
const NONCE_BYTES = 32;
const LABEL = Buffer.from('tessera-rpc-auth-v1\0', 'utf8');
/** An answer longer than this is not one (untrusted input, read before authentication). */
const AUTH_MESSAGE_CHARS_MAX = 1024;
const IDENTITY_CHARS_MAX = 200;

export function newNonce(): string {
  return crypto.randomBytes(NONCE_BYTES).toString('hex');
}

export function authMac(secret: Buffer, nonceHex: string, identity: string): Buffer {
  return crypto.createHmac('sha256', secret).update(LABEL).update(Buffer.from(nonceHex, 'hex')).update('\0').update(identity, 'utf8').digest();
}

export function authMessage(secret: Buffer, nonceHex: string, identity: string): string {
  return JSON.stringify({ v: 1, identity, mac: authMac(secret, nonceHex, identity).toString('hex') });
}

export interface AuthAnswer {
  identity: string;
  mac: Buffer;
}

/** The client's answer, or undefined when `text` is not one. */
export function parseAuthMessage(text: string): AuthAnswer | undefined {
  if (text.length > AUTH_MESSAGE_CHARS_MAX) return undefined;
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const r = o as Record<string, unknown>;
  const identity = r['identity'];
  const mac = r['mac'];
  if (r['v'] !== 1 || typeof identity !== 'string' || identity.length > IDENTITY_CHARS_MAX || typeof mac !== 'string' || !/^[0-9a-f]{64}$/.test(mac)) return undefined;
  return { identity, mac: Buffer.from(mac, 'hex') };
}

/** Does the answer prove one of the secrets (any of them: rotation)? Constant time per secret. */
export function verifyAuth(secrets: ClusterSecrets, nonceHex: string, a: AuthAnswer): boolean {
  let ok = false;
  for (const s of secrets) ok = crypto.timingSafeEqual(authMac(s, nonceHex, a.identity), a.mac) || ok;
  return ok;
}
