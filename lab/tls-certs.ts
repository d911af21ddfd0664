/**
 * A lab's TLS certificates in YugabyteDB's layout (rpc/tls.ts, docs/security.md), made with the
 * openssl command (Debian's `openssl` package; node:crypto cannot issue X.509 certificates): what
 * `tessera cert create-ca` / `create-node` run (cli/cert-commands.ts), and tests and bench:rpc too.
 * Keys are EC P-256; the CA's key stays in the directory (ca.key) to sign more nodes later — keep it
 * off the servers in production.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import { makeDirs } from '../common/fs-dirs';

const CA_DAYS = 3650;
const NODE_DAYS = 825;
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9.-]*$|^[0-9a-fA-F:]+$/;

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT') throw new DbError(ErrorCode.NOT_SUPPORTED, 'tessera cert needs the openssl command (Debian: apt-get install openssl)');
    throw new DbError(ErrorCode.INTERNAL, `openssl ${args[0]} failed: ${(err.stderr?.toString() ?? err.message).trim().split('\n')[0]}`);
  }
}

/** ca.crt and ca.key in `dir` (refuses to overwrite an existing CA). */
export function createCa(dir: string): string {
  makeDirs(dir, 'certs directory');
  const crt = path.join(dir, 'ca.crt');
  if (fs.existsSync(crt)) throw new DbError(ErrorCode.ALREADY_EXISTS, `${crt} exists; a new CA would orphan every node certificate it signed`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', path.join(dir, 'ca.key'), '-out', crt, '-days', String(CA_DAYS), '-subj', '/CN=tessera cluster CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  fs.chmodSync(path.join(dir, 'ca.key'), 0o600);
  return crt;
}

/** node.<name>.crt/.key in `dir`, signed by its CA, naming `name` (a host name or an IP address) and any `alsoNames`. */
export function createNodeCert(dir: string, name: string, alsoNames: readonly string[] = []): string {
  for (const n of [name, ...alsoNames]) if (!NODE_NAME.test(n)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `'${n}' is not a host name or an IP address`);
  const ca = path.join(dir, 'ca.crt');
  if (!fs.existsSync(ca) || !fs.existsSync(path.join(dir, 'ca.key'))) throw new DbError(ErrorCode.NOT_FOUND, `${dir} has no ca.crt and ca.key: run tessera cert create-ca --certs_dir ${dir} first`);
  const key = path.join(dir, `node.${name}.key`);
  const crt = path.join(dir, `node.${name}.crt`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-cert-'));
  try {
    const csr = path.join(work, 'node.csr');
    const ext = path.join(work, 'node.ext');
    const san = [name, ...alsoNames].map((n) => (net.isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
    fs.writeFileSync(ext, `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n`);
    openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${name}`]);
    openssl(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', path.join(dir, 'ca.key'), '-CAcreateserial', '-out', crt, '-days', String(NODE_DAYS), '-extfile', ext]);
    fs.chmodSync(key, 0o600);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return crt;
}
