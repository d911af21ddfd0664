/** `tessera start | status | stop | destroy`: a local cluster of child processes (see local-cluster.ts). */
import type { Command } from 'commander';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import { parseFlagList } from '../common/flags';
import { isHealthy } from '../lab/console-http';
import { print, printJson, printTable } from './cli-io';
import { defaultBaseDir, pidAlive, planCluster, readState, spawnServer, stopPids, waitHealthy, writeState, type ClusterState } from './local-cluster';
import { makeDirs } from '../common/fs-dirs';
import { callsCell, callsInFlight } from '../lab/rpcz-calls';

function nodeFlags(list: string | undefined): Map<number, Array<[string, string]>> {
  const out = new Map<number, Array<[string, string]>>();
  for (const [k, v] of parseFlagList(list ?? '')) {
    const m = /^n(\d+):([A-Za-z0-9_]+)$/.exec(k);
    if (!m) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--node_flags entry '${k}=${v}' must look like n0:FLAG=VALUE`);
    const i = Number(m[1]);
    out.set(i, [...(out.get(i) ?? []), [m[2]!, v]]);
  }
  return out;
}

function running(st: ClusterState): boolean {
  return pidAlive(st.supervisorPid) || st.servers.some((s) => pidAlive(s.pid));
}

async function stopCluster(baseDir: string): Promise<ClusterState | undefined> {
  const st = readState(baseDir);
  if (!st) return undefined;
  if (pidAlive(st.supervisorPid)) {
    // The supervisor stops its children cleanly and then exits.
    await stopPids([st.supervisorPid!], 20_000);
  }
  await stopPids(st.servers.map((s) => s.pid ?? 0).filter(Boolean));
  return st;
}

// Long by design (docs/conventions.md): a table of commands, each a few lines of options and one call; splitting it by size would only scatter the table.
export function registerClusterCommands(program: Command): void {
  program
    .command('start')
    .description('start a local cluster in the foreground (default: 1 master + 3 tservers, RF 3); Ctrl-C stops it')
    .option('--base_dir <dir>', 'data and logs of every node', defaultBaseDir())
    .option('--nodes <n>', 'nodes (a tserver each)', '3')
    .option('--masters <n>', 'masters (1 or 3), on the first nodes', '1')
    .option('--master_flags <list>', 'flags for every master: "a=1,b=2"')
    .option('--tserver_flags <list>', 'flags for every tserver: "a=1,b=2"')
    .option('--node_flags <list>', 'tserver flags of one node: "n0:FLAG=VALUE,n1:FLAG=VALUE"')
    .option('--host_base <n>', 'node i listens on 127.0.0.(host_base+i)', '1')
    .option('--port_offset <n>', 'added to every standard port', '0')
    .option('--timeout_ms <ms>', 'how long to wait for the cluster to become healthy', '60000')
    .action(async (o: { base_dir: string; nodes: string; masters: string; master_flags?: string; tserver_flags?: string; node_flags?: string; host_base: string; port_offset: string; timeout_ms: string }) => {
      const baseDir = path.resolve(o.base_dir);
      makeDirs(baseDir, 'base directory');
      const prev = readState(baseDir);
      if (prev && running(prev)) throw new DbError(ErrorCode.ALREADY_EXISTS, `a cluster is already running in ${baseDir} (tessera stop --base_dir ${o.base_dir})`);
      // Restart of an existing cluster: same plan, so the same data comes back on the same addresses.
      const st =
        prev ??
        (await planCluster({
          baseDir,
          nodes: Number(o.nodes),
          masters: Number(o.masters),
          hostBase: Number(o.host_base),
          portOffset: Number(o.port_offset),
          masterFlags: parseFlagList(o.master_flags ?? ''),
          tserverFlags: parseFlagList(o.tserver_flags ?? ''),
          nodeFlags: nodeFlags(o.node_flags),
        }));
      st.supervisorPid = process.pid;
      const children = new Map<number, ChildProcess>();
      const exits: string[] = [];
      let stopping = false;
      for (const s of st.servers) {
        const c = spawnServer(s, process.argv[1]!);
        children.set(c.pid!, c);
        c.on('exit', (code, sig) => {
          if (!stopping) {
            const line = `node ${s.node} ${s.role} (${s.rpcAddress}) exited ${sig ? `by ${sig}` : `with status ${String(code)}`}; see ${s.logFile}`;
            exits.push(line);
            process.stderr.write(line + '\n');
          }
        });
      }
      writeState(st);
      const stopAll = async (): Promise<void> => {
        stopping = true;
        await stopPids([...children.keys()]);
        for (const s of st.servers) delete s.pid;
        delete st.supervisorPid;
        writeState(st);
      };
      try {
        await waitHealthy(st, Number(o.timeout_ms), () => exits[0]);
      } catch (e) {
        await stopAll();
        throw e;
      }
      const masters = st.servers.filter((s) => s.role === 'master');
      print(`tessera cluster is up (${st.nodes} nodes, ${st.masters} master${st.masters > 1 ? 's' : ''}), data in ${baseDir}`);
      for (const s of st.servers) print(`  node ${s.node} ${s.role.padEnd(7)} rpc ${s.rpcAddress.padEnd(16)} console http://${s.webAddress}`);
      // Commands find the cluster of the default base directory by themselves (cli-io defaultMasterAddresses).
      const to = path.resolve(baseDir) === path.resolve(defaultBaseDir()) ? '' : ` --master_addresses ${st.masterAddresses}`;
      print(`try: tessera create-table demo --columns "id:int64,value:string" --hash id --tablets 3${to}`);
      print(`     tessera insert demo id=1 value=hello${to}   (master console: http://${masters[0]!.webAddress})`);
      const sqlAt = st.servers.find((s) => s.role === 'tserver' && s.pgAddress)?.pgAddress;
      if (sqlAt) print(`sql: psql -h ${sqlAt.slice(0, sqlAt.lastIndexOf(':'))} -p ${sqlAt.slice(sqlAt.lastIndexOf(':') + 1)} -U yugabyte   (or: tessera sql --node 0${path.resolve(baseDir) === path.resolve(defaultBaseDir()) ? '' : ` --base_dir ${o.base_dir}`})`);
      print('Ctrl-C stops the cluster (data is kept; tessera start resumes it).');
      await new Promise<void>((resolve) => {
        const done = (): void => {
          process.off('SIGINT', done);
          process.off('SIGTERM', done);
          resolve();
        };
        process.on('SIGINT', done);
        process.on('SIGTERM', done);
      });
      print('stopping...');
      await stopAll();
      print('stopped.');
    });

  program
    .command('status')
    .description('state of the local cluster in --base_dir')
    .option('--base_dir <dir>', 'the cluster base directory', defaultBaseDir())
    .option('--json', 'machine-readable output')
    .action(async (o: { base_dir: string; json?: boolean }) => {
      const st = readState(path.resolve(o.base_dir));
      if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no cluster in ${path.resolve(o.base_dir)} (start one with tessera start)`);
      const servers = await Promise.all(
        st.servers.map(async (s) => {
          const webUrl = `http://${s.webAddress}`;
          const running = pidAlive(s.pid);
          const healthy = running && (await isHealthy(webUrl));
          // Calls in flight now (its /rpcz): answered and awaited, and the oldest one's age.
          const calls = healthy ? await callsInFlight(webUrl) : undefined;
          return { node: s.node, role: s.role, rpcAddress: s.rpcAddress, webUrl, pid: s.pid ?? 0, running, healthy, ...(calls ? { calls } : {}) };
        }),
      );
      if (o.json) printJson({ baseDir: st.baseDir, masterAddresses: st.masterAddresses, supervisorPid: st.supervisorPid ?? 0, servers });
      else {
        print(`cluster in ${st.baseDir}; masters ${st.masterAddresses}`);
        printTable(
          ['node', 'role', 'rpc', 'console', 'pid', 'state', 'calls in/out'],
          servers.map((s) => [s.node, s.role, s.rpcAddress, s.webUrl, s.pid || '-', s.running ? (s.healthy ? 'running' : 'unhealthy') : 'stopped', callsCell(s.calls) ?? '']),
        );
      }
    });

  program
    .command('stop')
    .description('stop the local cluster in --base_dir (data is kept)')
    .option('--base_dir <dir>', 'the cluster base directory', defaultBaseDir())
    .action(async (o: { base_dir: string }) => {
      const st = await stopCluster(path.resolve(o.base_dir));
      if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no cluster in ${path.resolve(o.base_dir)}`);
      print('stopped.');
    });

  program
    .command('destroy')
    .description('stop the local cluster in --base_dir and delete its data')
    .option('--base_dir <dir>', 'the cluster base directory', defaultBaseDir())
    .action(async (o: { base_dir: string }) => {
      const baseDir = path.resolve(o.base_dir);
      const st = await stopCluster(baseDir);
      if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no cluster in ${baseDir}`);
      for (let i = 0; i < st.nodes; i++) fs.rmSync(path.join(baseDir, `node-${i}`), { recursive: true, force: true });
      fs.rmSync(path.join(baseDir, 'cluster.json'), { force: true });
      print(`destroyed the cluster in ${baseDir}.`);
    });
}
