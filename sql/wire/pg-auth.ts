/**
 * Password authentication of the PostgreSQL protocol, server side: MD5 and SCRAM-SHA-256
 * (RFC 5802 / RFC 7677, as PostgreSQL runs it: no channel binding, the user name taken from the
 * startup packet). Pure functions over the exchanged messages; the session drives the exchange.
 */
import * as crypto from 'node:crypto';

export const SCRAM_ITERATIONS = 4096;

function md5hex(s: Buffer | string): string {
  return crypto.createHash('md5').update(s).digest('hex');
}

/** What the client must send for MD5: 'md5' + md5hex(md5hex(password ‖ user) ‖ salt). */
export function md5Expected(user: string, password: string, salt: Buffer): string {
  return 'md5' + md5hex(Buffer.concat([Buffer.from(md5hex(password + user)), salt]));
}

const hmac = (key: Buffer, data: string): Buffer => crypto.createHmac('sha256', key).update(data).digest();
const sha256 = (b: Buffer): Buffer => crypto.createHash('sha256').update(b).digest();

export interface ScramState {
  clientFirstBare: string;
  serverFirst: string;
  nonce: string;
  salt: Buffer;
}

/** Parse "SCRAM-SHA-256\0 len n,,n=,r=NONCE" (the mechanism already read) and answer the server-first message. */
export function scramServerFirst(clientFirst: string): ScramState {
  const m = /^[ny],,(.*)$/.exec(clientFirst);
  if (!m) throw new Error('malformed SCRAM client-first message (channel binding is not supported)');
  const clientFirstBare = m[1]!;
  const cnonce = /(?:^|,)r=([^,]+)/.exec(clientFirstBare)?.[1];
  if (!cnonce) throw new Error('SCRAM client-first message without a nonce');
  const nonce = cnonce + crypto.randomBytes(18).toString('base64');
  const salt = crypto.randomBytes(16);
  const serverFirst = `r=${nonce},s=${salt.toString('base64')},i=${SCRAM_ITERATIONS}`;
  return { clientFirstBare, serverFirst, nonce, salt };
}

/** Check the client-final message; the server-final message ("v=…") when the proof holds, else undefined. */
export function scramServerFinal(st: ScramState, password: string, clientFinal: string): string | undefined {
  const proofAt = clientFinal.lastIndexOf(',p=');
  if (proofAt < 0) return undefined;
  const withoutProof = clientFinal.slice(0, proofAt);
  const nonce = /(?:^|,)r=([^,]+)/.exec(withoutProof)?.[1];
  if (nonce !== st.nonce) return undefined;
  const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64');
  const salted = crypto.pbkdf2Sync(password.normalize('NFKC'), st.salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = sha256(clientKey);
  const authMessage = `${st.clientFirstBare},${st.serverFirst},${withoutProof}`;
  const clientSignature = hmac(storedKey, authMessage);
  if (proof.length !== clientSignature.length) return undefined;
  const recovered = Buffer.from(proof.map((b, i) => b ^ clientSignature[i]!));
  if (!crypto.timingSafeEqual(sha256(recovered), storedKey)) return undefined;
  const serverSignature = hmac(hmac(salted, 'Server Key'), authMessage);
  return `v=${serverSignature.toString('base64')}`;
}
