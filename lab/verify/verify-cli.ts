/**
 * `tessera verify`: run Jepsen-style workloads against a fresh cluster (local processes, or with
 * `--driver docker` a Docker lab the run creates and removes) under a seeded nemesis, print one
 * verdict line per workload and write BASE/report.md plus history JSON.
 * Exit status 1 when any workload is INVALID (a vacuous or unavailable workload is reported, not failed;
 * vacuous = the history had < 1,000 ok operations or no applied fault window, so it proves nothing).
 */
import type { IsolationLevel } from '../../client/transaction';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../../common/errors';
import { flagAssignment } from '../../common/flags';
import type { DriverKind } from '../cluster-spec';
import { VERIFY_DOCKER_PORT_OFFSET } from './docker-verify-cluster';
import { ALL_NEMESIS_KINDS, NEMESIS_KINDS, parseNemesisKinds, SAFE_NEMESIS_KINDS } from './nemesis-schedule';
import { REGISTER_WRITE_MODES, type RegisterWriteMode } from './register-workload';
import { runCrashLoop } from './crash-loop';
import { DEFAULT_OP_TIMEOUT_MS, runWorkload, TXN_PROTOCOLS, WORKLOAD_NAMES, type TxnProtocol, type WorkloadName } from './verify-runner';
import { markdownReport, verdictLine, type WorkloadReport } from './verify-report';
import { makeDirs } from '../../common/fs-dirs';

interface VerifyCliOptions {
  workload: string;
  nemesis: string;
  time: string;
  seed: string;
  reportDir?: string;
  hostBase: string;
  portOffset?: string;
  concurrency: string;
  cycles: string;
  skewBeyond?: boolean;
  keepData?: boolean;
  driver: string;
}

function isolationLevel(v: string): IsolationLevel {
  if (v !== 'snapshot' && v !== 'serializable') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--isolation must be snapshot or serializable, got '${v}'`);
  return v;
}

function registerWrites(v: string): RegisterWriteMode {
  if (!(REGISTER_WRITE_MODES as readonly string[]).includes(v)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--register_writes must be one of ${REGISTER_WRITE_MODES.join(', ')}, got '${v}'`);
  return v as RegisterWriteMode;
}

/** `name=value` (a leading `--` is accepted) → `--name=value`, as the servers parse it. */
export function serverFlagArgs(list: readonly string[]): string[] {
  return list.map((f) => {
    const { name, value } = flagAssignment(f, '--server_flag');
    return `--${name}=${value}`;
  });
}

function txnProtocol(v: string): TxnProtocol {
  if (!(TXN_PROTOCOLS as readonly string[]).includes(v)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--txn_protocol must be one of ${TXN_PROTOCOLS.join(', ')}, got '${v}'`);
  return v as TxnProtocol;
}

/** The client-crash nemesis is the workload's own (its client dies mid-commit), not a server fault: split it off. */
export function splitClientCrash(list: string): { serverKinds: string; clientCrash: boolean } {
  const parts = list.split(',').map((s) => s.trim()).filter(Boolean);
  const rest = parts.filter((p) => p !== 'client-crash');
  return { serverKinds: rest.length > 0 ? rest.join(',') : 'none', clientCrash: rest.length !== parts.length };
}

function int(name: string, v: string): number {
  if (!/^\d+$/.test(v)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--${name} must be a non-negative integer, got '${v}'`);
  return Number(v);
}

function masterCount(v: string): 1 | 3 {
  if (v !== '1' && v !== '3') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--masters must be 1 or 3, got '${v}'`);
  return v === '1' ? 1 : 3;
}

function driverKind(v: string): DriverKind {
  if (v !== 'process' && v !== 'docker') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--driver must be process or docker, got '${v}'`);
  return v;
}

function workloads(list: string): Array<WorkloadName | 'crash'> {
  const out: Array<WorkloadName | 'crash'> = [];
  for (const w of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (w === 'all') out.push(...WORKLOAD_NAMES);
    else if (w === 'crash' || (WORKLOAD_NAMES as readonly string[]).includes(w)) out.push(w as WorkloadName | 'crash');
    else throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown workload '${w}' (one of ${WORKLOAD_NAMES.join(', ')}, crash, all)`);
  }
  return [...new Set(out)];
}

// Long by design (docs/conventions.md): a table of commands, each a few lines of options and one call; splitting it by size would only scatter the table.
export function registerVerifyCommand(program: Command): void {
  program
    .command('verify')
    .description('Jepsen-style verification on a fresh cluster (local processes or a Docker lab): workloads register|set|bank|append|counter|lock|crash|all under a seeded nemesis')
    .option('--workload <list>', 'register, set, bank, append, counter (increments), lock (row locks and fencing tokens: docs/rows.md), crash (kill -9 loop), all', 'all')
    .option('--nemesis <list>', `${NEMESIS_KINDS.join(', ')}, all (= ${ALL_NEMESIS_KINDS.join(',')}), none; with --txn_protocol percolator also client-crash`, SAFE_NEMESIS_KINDS.join(','))
    .option('--secure', 'a secured cluster: TLS on every RPC and console (certificates made for the run) and a cluster secret (docs/security.md); process driver')
    .option('--txn_protocol <p>', 'bank: yugabyte (default) or percolator (client-built Percolator transactions: docs/percolator.md)', 'yugabyte')
    .option('--time <seconds>', 'run time per workload (the most, with --until_counted)', '60')
    .option('--until_counted', 'end a workload early once its history counts (>= 1,000 ok ops and >= 1 applied fault window, then 1 s of recovery)')
    .option('--op_timeout_ms <n>', 'per-operation client deadline', String(DEFAULT_OP_TIMEOUT_MS))
    .option('--isolation <level>', 'isolation of the transactions of bank, append and register (cas, txn writes): snapshot or serializable (append is then checked for serializability: G2-item is an anomaly)', 'snapshot')
    .option('--register_writes <mode>', 'register blind writes: direct (non-transactional fast path) or txn (one-row transactions)', 'direct')
    .option('--seed <n>', 'seed of the fault schedule and the workload choices', '1')
    .option('--report_dir <dir>', 'where report.md and history-*.json go (default: a new temp dir)')
    .option('--host_base <n>', 'process driver: node i listens on 127.0.0.(host_base+i)', '80')
    .option('--port_offset <n>', `added to the standard ports (default 0; docker: published on 127.0.0.1 with offset ${VERIFY_DOCKER_PORT_OFFSET})`)
    .option('--concurrency <n>', 'logical client processes', '10')
    .option('--cycles <n>', 'crash workload: kill -9 cycles', '50')
    .option('--skew_beyond', 'add the skew-beyond nemesis (clock skew past max_clock_skew_usec: an unsafe configuration)')
    .option('--keep_data', 'keep the clusters\' data dirs')
    .option('--masters <n>', 'masters: 1, or 3 (on nodes 0-2; a master kill or pause then hits the sys catalog leader, and a partition of node 0-2 cuts its master off too)', '1')
    .option('--driver <kind>', 'process (child processes on loopback) or docker (a Docker lab of its own: containers killed/paused, network disconnected)', 'process')
    .option('--txn_defer_writes', 'transactions keep their writes to the commit: those whose writes fall in one tablet take the single-tablet fast path (docs/transactions.md)')
    .option('--server_flag <flag=value>', 'extra flag for every master and tserver, repeatable (e.g. --server_flag log_level=debug)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .action(async (raw: Record<string, string | boolean | undefined>) => {
      const o = raw as unknown as VerifyCliOptions & { report_dir?: string; host_base: string; port_offset?: string; skew_beyond?: boolean; keep_data?: boolean; until_counted?: boolean; op_timeout_ms?: string; register_writes?: string };
      const driver = driverKind(o.driver);
      const portOffsetRaw = o.port_offset ?? o.portOffset;
      const portOffset = portOffsetRaw === undefined ? (driver === 'docker' ? VERIFY_DOCKER_PORT_OFFSET : 0) : int('port_offset', String(portOffsetRaw));
      const dir = path.resolve(o.report_dir ?? o.reportDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-verify-')));
      makeDirs(dir, 'report directory');
      const { serverKinds, clientCrash } = splitClientCrash(o.nemesis);
      const nemesis = parseNemesisKinds(serverKinds);
      const protocol = txnProtocol(String(raw['txn_protocol'] ?? raw['txnProtocol'] ?? 'yugabyte'));
      if (clientCrash && protocol !== 'percolator') throw new DbError(ErrorCode.INVALID_ARGUMENT, 'the client-crash nemesis needs --txn_protocol percolator');
      const masters = masterCount(String(raw['masters'] ?? '1'));
      const common = { seed: int('seed', o.seed), dir, masters, hostBase: int('host_base', String(o.host_base ?? o.hostBase)), portOffset, driver, log: (l: string) => process.stdout.write(`  ${l}\n`) };
      const timeMs = int('time', o.time) * 1000;
      const opTimeoutMs = int('op_timeout_ms', String(o.op_timeout_ms ?? DEFAULT_OP_TIMEOUT_MS));
      const regWrites = registerWrites(String(o.register_writes ?? 'direct'));
      const isolation = isolationLevel(String(raw['isolation'] ?? 'snapshot'));
      const serverFlags = serverFlagArgs((raw['server_flag'] ?? raw['serverFlag'] ?? []) as unknown as string[]);
      const reports: WorkloadReport[] = [];
      for (const w of workloads(o.workload)) {
        process.stdout.write(`== ${w}\n`);
        const r =
          w === 'crash'
            ? await runCrashLoop({ ...common, cycles: int('cycles', o.cycles) })
            : await runWorkload({
                ...common,
                workload: w,
                nemesis,
                timeMs,
                concurrency: int('concurrency', o.concurrency),
                opTimeoutMs,
                registerWrites: regWrites,
                isolation,
                ...(protocol !== 'yugabyte' ? { txnProtocol: protocol } : {}),
                ...(clientCrash ? { clientCrash: true } : {}),
                ...(raw['secure'] ? { secure: true } : {}),
                ...((raw['txn_defer_writes'] ?? raw['txnDeferWrites']) ? { deferTxnWrites: true } : {}),
                ...(serverFlags.length ? { serverFlags } : {}),
                ...((o.until_counted ?? raw['untilCounted']) ? { endWhenCounted: true } : {}),
                ...((o.skew_beyond ?? o.skewBeyond) ? { skewBeyond: true } : {}),
                ...((o.keep_data ?? o.keepData) ? { keepData: true } : {}),
              });
        reports.push(r);
        process.stdout.write(verdictLine(r) + '\n');
      }
      fs.writeFileSync(path.join(dir, 'report.md'), markdownReport(reports, { nemesis: nemesis.join(',') || 'none', command: `tessera verify ${process.argv.slice(3).join(' ')}`, driver }));
      fs.writeFileSync(path.join(dir, 'report.json'), JSON.stringify(reports, null, 2));
      process.stdout.write(`report: ${path.join(dir, 'report.md')}\n`);
      if (reports.some((r) => r.verdict === 'INVALID')) throw new DbError(ErrorCode.INTERNAL, `verification found anomalies; see ${path.join(dir, 'report.md')}`);
    });
}
