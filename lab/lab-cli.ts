/**
 * `tessera lab …` (issue 7): the cluster drivers on the command line. The CLI's main calls
 * registerLabCommands(program). Tables for people, --json for scripts; on failure a one-line reason
 * (plus a log tail when a node did not come up) on stderr and exit status 1.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common';
import { type ClusterDriver, labConnectOptions, type LabStatus, type NodeAddresses, type RoleSelector, type ServerAddresses } from './cluster-driver';
import { DEFAULT_DOCKER_PORT_OFFSET, defaultSpec, type DriverKind, flagMapFromList, parseNodeFlags } from './cluster-spec';
import { ensureLabImage } from './docker-image';
import Docker from 'dockerode';
import { defaultLabBaseDir, newDriver, openLab } from './open-lab';
import { formatTable } from './text-table';
import { linksText } from './partition-plan';
import { EXPERIMENTS, findExperiment, passed, renderText, runExperiment } from './experiments';
import { PARTITION_HOLD_MS } from './experiments/partition-minority';
import { callsCell } from './rpcz-calls';

export interface LabCliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

const defaultIo: LabCliIo = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
};

function int(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--${name} must be a non-negative integer, got '${v}'`);
  return Number(v);
}

function driverKind(v: string): DriverKind {
  if (v !== 'process' && v !== 'docker') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--driver must be process or docker, got '${v}'`);
  return v;
}

function role(v: string | undefined): RoleSelector {
  if (v === undefined) return undefined;
  if (v !== 'master' && v !== 'tserver') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--role must be master or tserver, got '${v}'`);
  return v;
}

/** An RPC address as servers advertise it, with the published one this machine dials when they differ (docker). */
function rpcCell(s: ServerAddresses | undefined): string | undefined {
  if (!s) return undefined;
  return s.hostRpcAddress === s.rpcAddress ? s.rpcAddress : `${s.rpcAddress} (here: ${s.hostRpcAddress})`;
}

function addressesTable(nodes: readonly NodeAddresses[]): string {
  return formatTable(
    ['NODE', 'MASTER CONSOLE', 'TSERVER CONSOLE', 'MASTER RPC', 'TSERVER RPC'],
    nodes.map((n) => [n.name, n.master?.webUrl, n.tserver.webUrl, rpcCell(n.master), rpcCell(n.tserver)]),
  );
}

function statusTable(st: LabStatus): string {
  // The counts come from the masters' last heartbeat of each tserver: for one that does not answer
  // (paused, stopped, cut off) they are what it last reported, not what it serves now.
  let stale = false;
  const count = (healthy: boolean, n: number | undefined): string | number | undefined => {
    if (n === undefined || healthy) return n;
    stale = true;
    return `${n}*`;
  };
  const rows = st.nodes.flatMap((n) =>
    n.servers.map((s) => [n.name, s.raftRole ? `${s.role} (${s.raftRole})` : s.role, s.state, s.healthy ? 'yes' : 'no', rpcCell(s), s.webUrl, count(s.healthy, s.tablets), count(s.healthy, s.leaders), callsCell(s.calls), st.driver === 'docker' ? n.containerId : s.pid]),
  );
  const table = formatTable(['NODE', 'ROLE', 'STATE', 'HEALTHY', 'RPC', 'CONSOLE', 'TABLETS', 'LEADERS', 'CALLS IN/OUT', st.driver === 'docker' ? 'CONTAINER' : 'PID'], rows);
  const cut = `${st.partitioned.length ? `partitioned: ${st.partitioned.join(', ')}` : 'partitioned: none'}${st.cutLinks.length ? `; links cut: ${linksText(st.cutLinks)}` : ''}`;
  const note = stale ? '\n* as the master last heard from that tserver (it does not answer now)' : '';
  return `lab in ${st.baseDir} (${st.driver} driver)\n${table}\n${cut}${note}`;
}

// Long by design (docs/conventions.md): a table of commands, each a few lines of options and one call; splitting it by size would only scatter the table.
export function registerLabCommands(program: Command, io: LabCliIo = defaultIo): Command {
  const lab = program.command('lab').description('start and disturb lab clusters of local processes or Docker containers');
  const baseDirOpt = (c: Command): Command => c.option('--base_dir <dir>', 'folder holding lab.json, node data and logs', defaultLabBaseDir());
  const run = (fn: (...args: never[]) => Promise<void>) =>
    async (...args: unknown[]): Promise<void> => {
      try {
        await (fn as (...a: unknown[]) => Promise<void>)(...args);
      } catch (e) {
        // The same one line as every other `tessera` command: `error: CODE: message`.
        io.err(e instanceof DbError ? `error: ${e.code}: ${e.message}` : `error: ${(e as Error).message}`);
        process.exitCode = 1;
      }
    };
  const progress = (json: boolean) => (line: string) => {
    if (!json) io.err(line);
  };
  const open = (o: { base_dir: string; json?: boolean }): ClusterDriver => openLab(o.base_dir, { onProgress: progress(o.json === true) });

  baseDirOpt(lab.command('up'))
    .description('start a cluster: nodes n0… each with a tserver, a master on the first 1 or 3; waits until all are healthy')
    .option('--nodes <n>', 'number of nodes', '3')
    .option('--masters <n>', '1 or 3 masters (on the first nodes)', '1')
    .option('--driver <kind>', 'process or docker', 'process')
    .option('--tserver_flags <list>', 'flags for every tserver: "a=1,b=2"')
    .option('--master_flags <list>', 'flags for every master: "a=1,b=2"')
    .option('--node-flags <list>', 'flags for one node: "n0:TEST_x=1,n1:TEST_y=2" (tserver) or "n0/master:TEST_z=3"')
    .option('--server_entry <path>', 'server script relative to the package root', 'dist/cli/main.js')
    .option('--base-image <image>', 'docker: build the image FROM this base image (needs a registry) instead of FROM scratch')
    .option('--host_base <n>', "last octet of node 0's loopback address (default 1); docker: publish node i's ports on 127.0.0.(n+i) at the standard ports, as the process driver's")
    .option('--port_offset <n>', `added to the standard ports (docker without --host_base: default ${DEFAULT_DOCKER_PORT_OFFSET}, published consoles at 127.0.0.1:17000+i / 19000+i)`)
    .option('--health_timeout_ms <n>', 'bound on the wait for every node to be healthy', '60000')
    .option('--json', 'machine-readable output')
    .action(
      run(async (o: Record<string, string | boolean | undefined>) => {
        const driver = driverKind(String(o['driver']));
        const masters = int('masters', o['masters'] as string, 1);
        const nf = parseNodeFlags(o['nodeFlags'] as string | undefined);
        const spec = defaultSpec({
          baseDir: String(o['base_dir']),
          driver,
          nodes: int('nodes', o['nodes'] as string, 3),
          masters: masters as 1 | 3,
          tserverFlags: flagMapFromList(o['tserver_flags'] as string | undefined),
          masterFlags: flagMapFromList(o['master_flags'] as string | undefined),
          nodeFlags: nf.tserver,
          nodeMasterFlags: nf.master,
          serverEntry: String(o['server_entry']),
          hostBase: int('host_base', o['host_base'] as string | undefined, 1),
          ...(driver === 'docker' && o['host_base'] !== undefined ? { publishHostBase: int('host_base', o['host_base'] as string, 1) } : {}),
          // A docker lab on 127.0.0.1 shifts its ports clear of a process lab there; one on its own addresses needs no shift.
          portOffset: int('port_offset', o['port_offset'] as string | undefined, driver === 'docker' && o['host_base'] === undefined ? DEFAULT_DOCKER_PORT_OFFSET : 0),
          healthTimeoutMs: int('health_timeout_ms', o['health_timeout_ms'] as string, 60_000),
          ...(o['baseImage'] ? { baseImage: String(o['baseImage']) } : {}),
        });
        const json = o['json'] === true;
        const addrs = await newDriver(driver, { onProgress: progress(json) }).up(spec);
        if (json) io.out(JSON.stringify({ baseDir: spec.baseDir, driver, nodes: addrs, connect: labConnectOptions(addrs) }, null, 2));
        else io.out(`lab up in ${spec.baseDir} (${driver} driver): ${addrs.length} node(s) healthy\n${addressesTable(addrs)}\ntry: tessera list-tables --lab_dir ${spec.baseDir}   (data and admin commands find the lab's masters and published ports there)`);
      }),
    );

  baseDirOpt(lab.command('down'))
    .description('stop and remove the lab (processes or containers and network); node data too unless --keep-data')
    .option('--keep-data', 'keep node data folders')
    .action(
      run(async (o: { base_dir: string; keepData?: boolean }) => {
        await open(o).down({ keepData: o.keepData === true });
        io.out(`lab in ${o.base_dir} is down`);
      }),
    );

  baseDirOpt(lab.command('status'))
    .description('nodes, addresses, state, health, tablets and leaders per node')
    .option('--json', 'machine-readable output')
    .action(
      run(async (o: { base_dir: string; json?: boolean }) => {
        const st = await open(o).status();
        io.out(o.json ? JSON.stringify(st, null, 2) : statusTable(st));
      }),
    );

  baseDirOpt(lab.command('flag <node> <assignment>'))
    .description('set a flag at run time on a node: lab flag n0 TEST_x=1')
    .option('--force', 'allow changing a flag not tagged runtime')
    .option('--role <role>', 'only the master or only the tserver of the node')
    .option('--json', 'machine-readable output')
    .action(
      run(async (node: string, assignment: string, o: { base_dir: string; force?: boolean; role?: string; json?: boolean }) => {
        const eq = assignment.indexOf('=');
        if (eq <= 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `expected FLAG=VALUE, got '${assignment}'`);
        const res = await open(o).setFlag(node, assignment.slice(0, eq), assignment.slice(eq + 1), o.force === true, role(o.role));
        io.out(o.json ? JSON.stringify(res, null, 2) : formatTable(['NODE', 'ROLE', 'RESULT'], res.map((r) => [r.node, r.role, r.ok ? `set: ${JSON.stringify(r.value)}` : `refused: ${r.error ?? ''}`])));
      }),
    );

  const nodeOps: Array<[string, string, (d: ClusterDriver, n: string, r: RoleSelector) => Promise<void>]> = [
    ['kill', 'SIGKILL the node (docker: container kill)', (d, n, r) => d.kill(n, r)],
    ['stop', 'stop the node gracefully (SIGTERM, then SIGKILL)', (d, n, r) => d.stop(n, r)],
    ['start', 'start the node again with the same flags and wait until healthy', (d, n, r) => d.start(n, r)],
    ['restart', 'stop and start the node', (d, n, r) => d.restart(n, r)],
    ['pause', 'freeze the node (SIGSTOP; docker: docker pause, or SIGSTOP inside the container with --role)', (d, n, r) => d.pause(n, r)],
    ['resume', 'unfreeze the node (SIGCONT; docker: docker unpause, or SIGCONT inside the container with --role)', (d, n, r) => d.resume(n, r)],
  ];
  for (const [name, help, op] of nodeOps) {
    baseDirOpt(lab.command(`${name} <node>`))
      .description(help)
      .option('--role <role>', 'only the master or only the tserver of the node (docker: the server inside its container; the whole container when it is its only server)')
      .action(
        run(async (node: string, o: { base_dir: string; role?: string }) => {
          await op(open(o), node, role(o.role));
          io.out(`${name} ${node}: done`);
        }),
      );
  }

  baseDirOpt(lab.command('partition <nodes...>'))
    .description('cut the nodes off from the rest (process: TEST_drop_traffic_peers; docker: network disconnect); with --from, only their links to those nodes (a partial partition, TEST_drop_traffic_peers with either driver). Replaces any earlier partition')
    .option('--from <nodes...>', 'cut only the links between <nodes> and these nodes; every other path stays open')
    .action(
      run(async (nodes: string[], o: { base_dir: string; from?: string[] }) => {
        const d = open(o);
        await d.partition(nodes, o.from);
        const st = await d.status();
        io.out(o.from ? `links cut: ${linksText(st.cutLinks)} (every other path stays open)` : `partitioned: ${st.partitioned.join(', ')}`);
      }),
    );

  baseDirOpt(lab.command('heal'))
    .description('undo the partition')
    .action(
      run(async (o: { base_dir: string }) => {
        await open(o).heal();
        io.out('healed');
      }),
    );

  baseDirOpt(lab.command('logs <node>'))
    .description("the last lines of a node's logs")
    .option('--lines <n>', 'lines per server', '100')
    .action(
      run(async (node: string, o: { base_dir: string; lines: string }) => {
        io.out(await open(o).logs(node, int('lines', o.lines, 100)));
      }),
    );

  lab
    .command('experiment <name>')
    .description(`run a scripted experiment on a fresh 3-node lab of the real servers and write a Markdown report (${EXPERIMENTS.map((e) => e.name).join(', ')}); exit 0 only when every check held`)
    .option('--base_dir <dir>', 'folder for the experiment labs and reports (BASE/experiments/*.md)', path.join(path.dirname(defaultLabBaseDir()), 'experiments'))
    .option('--driver <kind>', 'process (local processes) or docker (one container per node; the image is built offline on first use)', 'process')
    .option('--host_base <n>', "process: last octet of node 0's loopback address", '1')
    .option('--port_offset <n>', `added to the standard ports (process default 0; docker default ${DEFAULT_DOCKER_PORT_OFFSET}: published on 127.0.0.1:17100+i, 19100+i, …)`)
    .option('--server_entry <path>', 'server script relative to the package root', 'dist/cli/main.js')
    .option('--keep', 'leave the lab running afterwards')
    .option('--rows <n>', 'intents-apply: rows in the transaction', '100')
    .option('--row-bytes <n>', 'intents-apply: bytes per row', '1048576')
    .option('--delay-ms <n>', 'intents-apply: TEST_inject_sleep_before_applying_intents_ms on n0', '60000')
    .option('--via <how>', "intents-apply: 'client' (the client library) or 'sql' (the blog's statements through port 5433)", 'client')
    .option('--hold-ms <n>', 'partition-minority: how long the node stays cut off (past rpc_connection_timeout_ms, 15 s, under Docker: RPC keepalive closes the dead connections)', String(PARTITION_HOLD_MS))
    .option('--writes <n>', 'durability: acknowledged writes per run before the fault (default 3000)')
    .option('--load-ms <n>', 'durability: longest load per run before the fault (default 10000)')
    .option('--writers <n>', 'durability: concurrent writers (default 32)')
    .option('--interval-ms <n>', 'durability: interval_durable_wal_write_ms on the tservers (default 1000)')
    .option('--threshold-bytes <n>', 'tablet-split: the low-phase split threshold (default 262144)')
    .option('--json', 'machine-readable output')
    .action(
      run(async (name: string, o: { base_dir: string; driver: string; host_base: string; port_offset?: string; server_entry: string; keep?: boolean; json?: boolean; rows: string; rowBytes: string; delayMs: string; via: string; holdMs: string; writes?: string; loadMs?: string; writers?: string; intervalMs?: string; thresholdBytes?: string }) => {
        const def = findExperiment(name);
        if (!def) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown experiment '${name}': one of ${EXPERIMENTS.map((e) => e.name).join(', ')}`);
        const driver = driverKind(o.driver);
        if (o.via !== 'client' && o.via !== 'sql') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--via must be client or sql, not '${o.via}'`);
        const r = await runExperiment(def, {
          baseDir: path.resolve(o.base_dir),
          driver,
          hostBase: int('host_base', o.host_base, 1),
          portOffset: int('port_offset', o.port_offset, driver === 'docker' ? DEFAULT_DOCKER_PORT_OFFSET : 0),
          serverEntry: o.server_entry,
          keep: o.keep === true,
          params: { rows: int('rows', o.rows, 100), rowBytes: int('row-bytes', o.rowBytes, 1048576), delayMs: int('delay-ms', o.delayMs, 60000), ...(o.via === 'sql' ? { viaSql: 1 } : {}), holdMs: int('hold-ms', o.holdMs, PARTITION_HOLD_MS), ...durabilityParams(o), ...(o.thresholdBytes ? { thresholdBytes: int('threshold-bytes', o.thresholdBytes, 262144) } : {}) },
          progress: progress(o.json === true),
        });
        io.out(o.json ? JSON.stringify({ ...r, driver, passed: passed(r) }, null, 2) : renderText(r));
        if (!passed(r)) process.exitCode = 1;
      }),
    );

  lab
    .command('image')
    .description('build the lab Docker image offline (reused when the inputs are unchanged)')
    .option('--base-image <image>', 'build FROM this base image instead of FROM scratch')
    .option('--force', 'rebuild even when the tag exists')
    .option('--json', 'machine-readable output')
    .action(
      run(async (o: { baseImage?: string; force?: boolean; json?: boolean }) => {
        const img = await ensureLabImage({ docker: new Docker(), ...(o.baseImage ? { baseImage: o.baseImage } : {}), force: o.force === true, onProgress: progress(o.json === true) });
        io.out(o.json ? JSON.stringify(img, null, 2) : `${img.tag} (${img.built ? 'built' : 'reused'}, ${img.files} files)`);
      }),
    );
  return lab;
}

/** The durability experiment's options, only those given (the experiment has the defaults). */
function durabilityParams(o: { writes?: string; loadMs?: string; writers?: string; intervalMs?: string }): Record<string, number> {
  const out: Record<string, number> = {};
  if (o.writes !== undefined) out['writes'] = int('writes', o.writes, 3000);
  if (o.loadMs !== undefined) out['loadMs'] = int('load-ms', o.loadMs, 10_000);
  if (o.writers !== undefined) out['writers'] = int('writers', o.writers, 32);
  if (o.intervalMs !== undefined) out['intervalMs'] = int('interval-ms', o.intervalMs, 1000);
  return out;
}
