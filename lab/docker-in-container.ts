/**
 * Small scripts the Docker driver runs inside a node's container with `docker exec NODE -e SCRIPT`
 * (the image is FROM scratch: node is the only program there). They act on one server of the node
 * (the supervisor's child whose argv is `node ENTRY ROLE …`) or read a console on the container's
 * own loopback, which still works while the container is disconnected from the lab network.
 */
import type { ServerState } from './cluster-driver';
import type { ServerRole } from './cluster-spec';
import { procStatState } from './process-table';

/** What signalRoleScript prints on its last line: the pids it signalled. */
export interface RoleSignalReply {
  pids: number[];
}

/**
 * argv: ROLE[,ROLE] SIGNAL WAIT_MS. Sends SIGNAL to every process whose argv[2] is one of the ROLEs
 * (PID 1, the supervisor, has its entry there instead). SIGTERM is followed by SIGCONT, so a server
 * paused alone (SIGSTOP) acts on it. For SIGTERM/SIGKILL it then waits until they are gone (reaped by
 * the supervisor), sending SIGKILL after WAIT_MS; the exec's own timeout bounds the rest. SIGSTOP /
 * SIGCONT return at once. Prints {"pids":[…]}.
 */
export const SIGNAL_ROLE_SCRIPT = `
const fs = require('fs');
const [roleList, sig, waitMs] = process.argv.slice(1);
const roles = roleList.split(',');
const self = String(process.pid);
const pids = fs.readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p) && p !== '1' && p !== self).filter((p) => {
  try { return roles.includes(fs.readFileSync('/proc/' + p + '/cmdline', 'utf8').split('\\0')[2]); } catch { return false; }
}).map(Number);
const alive = (p) => { try { return !/^[0-9]+ \\(.*\\) Z/.test(fs.readFileSync('/proc/' + p + '/stat', 'utf8')); } catch { return false; } };
for (const p of pids) { try { process.kill(p, sig); if (sig === 'SIGTERM') process.kill(p, 'SIGCONT'); } catch {} }
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

/**
 * argv: PARENT_PID ROLE…. The state of each ROLE's server among PARENT_PID's children (in a container
 * PARENT_PID is 1, the supervisor): running, paused (SIGSTOP) or stopped (no such child, or a zombie
 * not reaped yet), read from /proc/PID/stat with the same rule as the process driver (procStatState).
 * Prints {"master":"running","tserver":"paused"}.
 */
export const ROLE_STATES_SCRIPT = `
const fs = require('fs');
const procStatState = ${procStatState.toString()};
const [parent, ...roles] = process.argv.slice(1);
const found = {};
for (const p of fs.readdirSync('/proc').filter((x) => /^[0-9]+$/.test(x))) {
  let cmd, stat;
  try { cmd = fs.readFileSync('/proc/' + p + '/cmdline', 'utf8').split('\\0'); stat = fs.readFileSync('/proc/' + p + '/stat', 'utf8'); } catch { continue; }
  const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  if (ppid !== parent || !roles.includes(cmd[2])) continue;
  (found[cmd[2]] = found[cmd[2]] || []).push(procStatState(stat));
}
const out = {};
for (const r of roles) out[r] = combineRoleProcessStates(found[r] || []);
function combineRoleProcessStates(states) {
  if (states.includes('running')) return 'running';
  return states.includes('paused') ? 'paused' : 'stopped';
}
console.log(JSON.stringify(out));
`;

/** The last line of ROLE_STATES_SCRIPT's output: a state for every role asked about, else a clear error. */
export function parseRoleStates(output: string, roles: readonly ServerRole[]): Partial<Record<ServerRole, ServerState>> {
  const last = output.trim().split('\n').pop() ?? '';
  let v: unknown;
  try {
    v = JSON.parse(last);
  } catch {
    v = undefined;
  }
  const res: Partial<Record<ServerRole, ServerState>> = {};
  for (const r of roles) {
    const st = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[r] : undefined;
    if (st !== 'running' && st !== 'paused' && st !== 'stopped') throw new Error(`reading the server states inside the container gave no answer for the ${r}: ${output.slice(-300)}`);
    res[r] = st;
  }
  return res;
}

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

/** role: the server(s) signalled, for the error text (e.g. tserver, or master,tserver). */
export function parseRoleSignalReply(output: string, role: string): RoleSignalReply {
  const last = output.trim().split('\n').pop() ?? '';
  try {
    const v = JSON.parse(last) as { pids?: unknown };
    if (Array.isArray(v.pids) && v.pids.every((p) => typeof p === 'number')) return { pids: v.pids as number[] };
  } catch {
    // fall through
  }
  throw new Error(`signalling the ${role} inside the container gave no answer: ${output.slice(-300)}`);
}
