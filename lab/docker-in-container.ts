/**
 * Small scripts the Docker driver runs inside a node's container with `docker exec NODE -e SCRIPT`
 * (the image is FROM scratch: node is the only program there). They act on one server of the node
 * (the supervisor's child whose argv is `node ENTRY ROLE …`) or read a console on the container's
 * own loopback, which still works while the container is disconnected from the lab network.
 */
import type { ServerRole } from './cluster-spec';

/** What signalRoleScript prints on its last line: the pids it signalled. */
export interface RoleSignalReply {
  pids: number[];
}

/**
 * argv: ROLE SIGNAL WAIT_MS. Sends SIGNAL to every process whose argv[2] is ROLE (PID 1, the
 * supervisor, has its entry there instead). For SIGTERM/SIGKILL it then waits until they are gone
 * (reaped by the supervisor), sending SIGKILL after WAIT_MS; the exec's own timeout bounds the rest.
 * Prints {"pids":[…]}.
 */
export const SIGNAL_ROLE_SCRIPT = `
const fs = require('fs');
const [role, sig, waitMs] = process.argv.slice(1);
const self = String(process.pid);
const pids = fs.readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p) && p !== '1' && p !== self).filter((p) => {
  try { return fs.readFileSync('/proc/' + p + '/cmdline', 'utf8').split('\\0')[2] === role; } catch { return false; }
}).map(Number);
const alive = (p) => { try { return !/^[0-9]+ \\(.*\\) Z/.test(fs.readFileSync('/proc/' + p + '/stat', 'utf8')); } catch { return false; } };
for (const p of pids) { try { process.kill(p, sig); } catch {} }
const done = () => { console.log(JSON.stringify({ pids })); process.exit(0); };
if (sig !== 'SIGTERM' && sig !== 'SIGKILL') done();
const t0 = Date.now();
let escalated = false;
setInterval(() => {
  const left = pids.filter(alive);
  if (left.length === 0) done();
  if (!escalated && Date.now() - t0 > Number(waitMs)) { escalated = true; for (const p of left) { try { process.kill(p, 'SIGKILL'); } catch {} } }
}, 50);
`;

/** argv: PORT PATH TIMEOUT_MS. GET http://127.0.0.1:PORT/PATH; prints the body, exits 1 with the reason on failure. */
export const CONSOLE_GET_SCRIPT = `
const http = require('http');
const [port, path, timeoutMs] = process.argv.slice(1);
const req = http.get({ host: '127.0.0.1', port: Number(port), path, timeout: Number(timeoutMs) }, (res) => {
  const chunks = [];
  res.on('data', (c) => chunks.push(c));
  res.on('end', () => {
    if (res.statusCode !== 200) { console.error('HTTP ' + res.statusCode); process.exit(1); }
    process.stdout.write(Buffer.concat(chunks));
  });
});
req.on('timeout', () => { console.error('no answer within ' + timeoutMs + ' ms'); process.exit(1); });
req.on('error', (e) => { console.error(e.message); process.exit(1); });
`;

export function parseRoleSignalReply(output: string, role: ServerRole): RoleSignalReply {
  const last = output.trim().split('\n').pop() ?? '';
  try {
    const v = JSON.parse(last) as { pids?: unknown };
    if (Array.isArray(v.pids) && v.pids.every((p) => typeof p === 'number')) return { pids: v.pids as number[] };
  } catch {
    // fall through
  }
  throw new Error(`signalling the ${role} inside the container gave no answer: ${output.slice(-300)}`);
}
