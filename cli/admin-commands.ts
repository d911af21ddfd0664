/**
 * `tessera admin --master_addresses A <command>`: YugabyteDB's yb-admin commands, by their names.
 */
import { CLUSTER_SECRET_ENV, readSecretFile, clientTlsOf } from '../rpc';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { httpRequest } from '../lab/console-http';
import { tabletServerMethods } from '../rpc';
import type { TesseraClient } from '../client/tessera-client';
import { checkReplicaConvergence, convergenceLine } from '../lab/verify/replica-convergence';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { registerSplitCommands } from './split-commands';
import { readLabState } from '../lab/lab-state';
import { registerBackupCommands } from './backup-commands';
import { CERTS_DIR_HELP, CLUSTER_SECRET_HELP, DEFAULT_MASTER_ADDRESSES, LAB_DIR_HELP, print, printJson, printTable, withClient } from './cli-io';

/** Environment variable naming the console token file `admin set_flag` sends to a console URL. */
const CONSOLE_TOKEN_ENV = 'TESSERA_WEBSERVER_TOKEN_FILE';

interface AdminOpts {
  master_addresses: string;
  lab_dir?: string;
  cluster_secret_file?: string;
  certs_dir?: string;
  json?: boolean;
  timeout_ms?: string;
}

const STEPDOWN_HOPS_MAX = 5;

async function findTablet(c: TesseraClient, tabletId: string): Promise<{ table: string; replicas: Array<{ uuid: string; rpcAddress: string; role: string }> }> {
  for (const t of await c.listTables()) {
    const loc = await c.tableLocations(t.name);
    const x = loc.tablets.find((tt) => tt.tabletId === tabletId);
    if (x) return { table: t.name, replicas: x.replicas };
  }
  throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${tabletId} not found in any table`);
}

// Long by design (docs/conventions.md): a table of commands, each a few lines of options and one call; splitting it by size would only scatter the table.
export function registerAdminCommands(program: Command): void {
  const admin = program
    .command('admin')
    .description('cluster administration (yb-admin style)')
    .option('--master_addresses <addrs>', 'comma-separated master RPC addresses', DEFAULT_MASTER_ADDRESSES)
    .option('--lab_dir <dir>', LAB_DIR_HELP)
    .option('--cluster_secret_file <path>', CLUSTER_SECRET_HELP)
    .option('--certs_dir <dir>', CERTS_DIR_HELP)
    .option('--timeout_ms <ms>', 'deadline of the operation')
    .option('--json', 'machine-readable output');
  const opts = (cmd: Command): AdminOpts => cmd.optsWithGlobals<AdminOpts>();
  const run = <T>(cmd: Command, f: (c: TesseraClient) => Promise<T>): Promise<T> => {
    const o = opts(cmd);
    return withClient(o, o.timeout_ms ? Number(o.timeout_ms) : undefined, f);
  };

  registerSplitCommands(admin, run, (cmd) => opts(cmd).json === true);

  admin.command('list_all_masters').action(async (_o: unknown, cmd: Command) => {
    const r = await run(cmd, (c) => c.listMasters());
    const masters = (r.masters ?? []).map((m) => ({ uuid: m.uuid ?? '', rpcAddress: m.rpcAddress ?? '', webAddress: m.webAddress ?? '', role: m.role ?? '', term: Number(m.term ?? 0n) }));
    if (opts(cmd).json) printJson({ masters });
    else printTable(['Master UUID', 'RPC Host/Port', 'Console', 'Role', 'Term'], masters.map((m) => [m.uuid, m.rpcAddress, m.webAddress, m.role, m.term]));
  });

  admin.command('list_all_tablet_servers').action(async (_o: unknown, cmd: Command) => {
    const r = await run(cmd, (c) => c.listTabletServers());
    const servers = (r.servers ?? []).map((s) => ({
      uuid: s.uuid ?? '',
      rpcAddress: s.rpcAddress ?? '',
      webAddress: s.webAddress ?? '',
      alive: s.alive ?? false,
      lastHeartbeatMsAgo: Number(s.lastHeartbeatMsAgo ?? 0n),
      tablets: s.tablets ?? 0,
      leaders: s.leaders ?? 0,
    }));
    if (opts(cmd).json) printJson({ tabletServers: servers });
    else printTable(['Tablet Server UUID', 'RPC Host/Port', 'Console', 'Alive', 'Heartbeat ms ago', 'Tablets', 'Leaders'], servers.map((s) => [s.uuid, s.rpcAddress, s.webAddress, s.alive ? 'ALIVE' : 'DEAD', s.lastHeartbeatMsAgo, s.tablets, s.leaders]));
  });

  admin.command('list_tables').action(async (_o: unknown, cmd: Command) => {
    const tables = await run(cmd, (c) => c.listTables());
    if (opts(cmd).json) printJson({ tables });
    else printTable(['Table', 'Id', 'Tablets', 'RF'], tables.map((t) => [t.name, t.id, t.numTablets, t.replicationFactor]));
  });

  admin.command('list_tablets <table>').action(async (table: string, _o: unknown, cmd: Command) => {
    const loc = await run(cmd, (c) => c.tableLocations(table));
    const tablets = loc.tablets.map((t) => ({ tabletId: t.tabletId, partition: { start: t.start, end: t.end }, leader: t.replicas.find((r) => r.role === 'LEADER')?.rpcAddress ?? '', replicas: t.replicas }));
    if (opts(cmd).json) printJson({ table, tablets });
    else printTable(['Tablet UUID', 'Partition', 'Leader', 'Replicas'], tablets.map((t) => [t.tabletId, `[${t.partition.start}, ${t.partition.end})`, t.leader || '(none)', t.replicas.map((r) => `${r.rpcAddress}(${r.role[0] ?? '?'})`).join(' ')]));
  });

  admin.command('leader_stepdown <tablet> [new_leader_uuid]').action(async (tablet: string, to: string | undefined, _o: unknown, cmd: Command) => {
    await run(cmd, async (c) => {
      const t = await findTablet(c, tablet);
      let addr = t.replicas.find((r) => r.role === 'LEADER')?.rpcAddress ?? t.replicas[0]?.rpcAddress ?? '';
      for (let hop = 0; hop < STEPDOWN_HOPS_MAX; hop++) {
        try {
          await c.rpcClient().call(addr, tabletServerMethods().leaderStepdown, { tabletId: tablet, newLeaderUuid: to ?? '' }, { timeoutMs: 5000 });
          return;
        } catch (e) {
          const hint = e instanceof DbError && e.code === ErrorCode.NOT_THE_LEADER ? e.details['leaderHint'] : undefined;
          if (typeof hint !== 'string' || !hint || hint === addr) throw e;
          addr = hint;
        }
      }
      throw new DbError(ErrorCode.TIMED_OUT, `could not reach the leader of tablet ${tablet}`);
    });
    print(`leader of tablet ${tablet} asked to step down${to ? ` to ${to}` : ''}`);
  });

  admin
    .command('check_replicas [table]')
    .description('do all replicas of each tablet (of TABLE, else of every table and the transaction status tablets) show the same rows at one hybrid time, and hold the same provisional records of the transactions still open?')
    .option('--behind_ms <ms>', "read this many ms before the first replica's now, so replicas a little behind compare too (0 on a quiet cluster)", '1000')
    .option('--wait_ms <ms>', 'ask a tablet again until this deadline while its replicas are behind, missing or busy', '30000')
    .option('--replicas', "also list every replica's answer: applied index, rows shown and their digest, open transactions' provisional records and their digest")
    .action(async (table: string | undefined, o: { behind_ms: string; wait_ms: string; replicas?: boolean }, cmd: Command) => {
      const behindMs = Number(o.behind_ms);
      const waitMs = Number(o.wait_ms);
      if (!Number.isInteger(behindMs) || behindMs < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--behind_ms must be a whole number of ms >= 0, got '${o.behind_ms}'`);
      if (!Number.isInteger(waitMs) || waitMs <= 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--wait_ms must be a whole number of ms > 0, got '${o.wait_ms}'`);
      const { tservers, replicas } = await run(cmd, async (c) => {
        const names = table ? [table] : [...(await c.listTables()).map((t) => t.name), TRANSACTIONS_TABLE];
        const replicas = new Map<string, { table: string; count: number }>();
        for (const name of names) {
          const loc = await c.tableLocations(name).catch((e: unknown) => {
            // No transaction ever ran: the status table does not exist yet.
            if (!table && name === TRANSACTIONS_TABLE && e instanceof DbError && e.code === ErrorCode.TABLE_NOT_FOUND) return undefined;
            throw e;
          });
          for (const t of loc?.tablets ?? []) replicas.set(t.tabletId, { table: name, count: t.replicas.length });
        }
        const servers = (await c.listTabletServers()).servers ?? [];
        // A lab's consoles are reached through the URLs its state records (docker: published ports).
        const labDir = opts(cmd).lab_dir;
        const labUrls = new Map((labDir ? (readLabState(labDir)?.nodes ?? []) : []).map((n) => [n.tserver.rpcAddress, n.tserver.webUrl]));
        const webUrl = (x: (typeof servers)[number]): string => labUrls.get(x.rpcAddress ?? '') ?? `http://${x.webAddress}`;
        return { tservers: servers.filter((x) => x.alive && x.webAddress).map((x) => ({ name: x.rpcAddress ?? x.uuid ?? '', webUrl: webUrl(x) })), replicas };
      });
      const r = await checkReplicaConvergence({ tservers, replicationFactor: (id) => replicas.get(id)?.count ?? 1, timeoutMs: waitMs, tablets: new Set(replicas.keys()), behindMs });
      const all = [...r.diverged, ...r.unsettled];
      // Tablets no live tserver lists as RUNNING are in no list of the report.
      const notHosted = replicas.size - r.tablets;
      if (opts(cmd).json) printJson(r);
      else {
        print(convergenceLine(r));
        if (o.replicas) {
          const decided = [...r.diverged, ...(r.convergedTablets ?? [])];
          printTable(
            ['Tablet', 'Table', 'Replica', 'Applied index', 'Rows', 'Rows sha256', 'Open txns', 'Intent records', 'Intents sha256', 'Result'],
            decided
              .sort((a, b) => a.table.localeCompare(b.table) || a.tabletId.localeCompare(b.tabletId))
              .flatMap((t) =>
                (t.replicas ?? []).map((d) => [t.tabletId, t.table, d.server, String(d.appliedIndex), String(d.rows), d.sha256.slice(0, 16), String(d.intents?.txns ?? ''), String(d.intents?.records ?? ''), d.intents?.sha256.slice(0, 16) ?? '', t.result === 'diverged' && t.differing?.includes(d.server) ? 'DIFFERS' : t.result.toUpperCase()]),
              ),
          );
        }
        if (all.length) printTable(['Tablet', 'Table', 'Result', 'Why'], all.map((t) => [t.tabletId, t.table, t.result.toUpperCase(), t.why ?? '']));
      }
      if (r.diverged.length) throw new DbError(ErrorCode.CORRUPTION, `${r.diverged.length} tablet(s) have replicas showing different rows or holding different provisional records`);
      if (r.unsettled.length || notHosted > 0) throw new DbError(ErrorCode.TIMED_OUT, `${r.unsettled.length + notHosted} tablet(s) could not be compared within ${waitMs} ms${notHosted ? ` (${notHosted} hosted by no live tserver)` : ''}`);
    });

  admin
    .command('set_flag <server> <flag> <value>')
    .description('SERVER is an RPC address (host:port) or a console URL (http://host:port)')
    .option('--force', 'change a flag that is not tagged runtime (the server must run with --allow_unsafe_flag_changes)')
    .option('--token_file <path>', `console URL: the file of the console token (or cluster secret) sent as a bearer token (default: $${CONSOLE_TOKEN_ENV}, else $${CLUSTER_SECRET_ENV})`)
    .action(async (server: string, flag: string, value: string, o: { force?: boolean; token_file?: string }, cmd: Command) => {
      const force = o.force ?? false;
      if (server.startsWith('http://') || server.startsWith('https://')) {
        const tokenFile = o.token_file ?? process.env[CONSOLE_TOKEN_ENV] ?? process.env[CLUSTER_SECRET_ENV];
        const token = tokenFile ? readSecretFile(tokenFile, 'token_file')[0]!.toString('utf8') : undefined;
        const certsDir = opts(cmd).certs_dir ?? process.env['TESSERA_CERTS_DIR'];
        const ca = server.startsWith('https://') && certsDir ? clientTlsOf(certsDir).ca : undefined;
        const r = await httpRequest(`${server.replace(/\/$/, '')}/api/v1/flags`, { method: 'POST', body: JSON.stringify({ name: flag, value, force }), token, ca });
        if (r.status !== 200) {
          let err: DbError = new DbError(ErrorCode.INTERNAL, `HTTP ${r.status}: ${r.body.slice(0, 200)}`);
          try {
            const w = JSON.parse(r.body) as { code?: string; message?: string };
            if (w.code && w.message) err = DbError.fromWire({ code: w.code, message: w.message });
          } catch {
            // keep the HTTP text
          }
          throw err;
        }
        print(`${flag}=${value} on ${server}`);
        return;
      }
      const r = await run(cmd, (c) => c.rpcClient().call(server, tabletServerMethods().setFlag, { name: flag, value, force }, { timeoutMs: 5000 }));
      if (opts(cmd).json) printJson(r);
      else print(`${r.name ?? flag}=${r.value ?? value} on ${server}`);
    });
  registerBackupCommands(admin, run, (cmd) => opts(cmd).json === true);
}
