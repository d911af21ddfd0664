/**
 * paused-status-leader: a lost commit answer, settled definitely. Writers run short transactions
 * (each INSERTs 2 fresh rows) and the tserver leading the status tablet — where every transaction's
 * record lives and every commit is decided — is paused (SIGSTOP: it keeps its connections and answers
 * nothing) for 10 s. A commit sent to it gets no answer; after 1 s the client asks the status tablet's
 * other replicas, which elect a new leader. That leader has no record of the transactions the paused
 * one held alone (a new record goes through Raft only with the commit, an abort or the first
 * heartbeat), and it would remember them had they committed and been forgotten since they started —
 * so it proves they never committed, and each such commit fails with a definite TXN_ABORTED instead
 * of "outcome unknown"; a commit the old leader had replicated before it stopped is answered
 * COMMITTED (also when the transaction was applied everywhere and forgotten meanwhile). Besides the
 * writers, 4 transactions write their rows just before the pause and commit just after it. Checks: no
 * transaction ended "outcome unknown", those 4 were proven never committed, transactions committed
 * while the old leader was still paused, and the table holds exactly the committed transactions'
 * rows.
 */
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { labConnectOptions } from '../cluster-driver';
import { leadersByTablet, replicasViaDriver } from '../tablet-view';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';

const WRITERS = 8;
/** Each operation's deadline (begin, write, commit; retries included): shorter than the pause. */
const DEADLINE_MS = 6_000;
/** One attempt's wait for an answer before the call is resent to the tablet's replicas. */
const ATTEMPT_MS = 1_000;
const PAUSE_MS = 10_000;
/** The load runs this long before the pause and after the resume. */
const BEFORE_MS = 2_000;
const AFTER_MS = 2_000;
/** Transactions per writer at most (the load's time usually ends it first). */
const TXNS_MAX = 10_000;
/** Transactions that write their rows just before the pause and commit just after it. */
const HELD = 4;

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function pausedStatusLeader(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'paused-status-leader');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const client = await TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: DEADLINE_MS, rpcSingleCallTimeoutMs: ATTEMPT_MS });
  const heldClient = await TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: DEADLINE_MS, rpcSingleCallTimeoutMs: ATTEMPT_MS, transactionHeartbeatUsec: 60_000_000 });
  let victim: string | undefined;
  try {
    await lab.leaders();
    const statusLeaders = (): Promise<Array<[string, { node: string }]>> =>
      waitUntil(
        async () => {
          const st = [...leadersByTablet(await replicasViaDriver(lab.driver)).entries()].filter(([, x]) => x.row.table === 'transactions');
          return st.length > 0 ? st : undefined;
        },
        { timeoutMs: 20_000, what: 'a leader for the status tablets' },
      );
    lab.log(`${WRITERS} writers run 2-row INSERT transactions (deadline ${DEADLINE_MS} ms, one attempt ${ATTEMPT_MS} ms)`);

    const committedRows = new Map<bigint, string>();
    const failedRows = new Set<bigint>();
    const failures: Record<string, number> = {};
    const unknown: string[] = [];
    let committed = 0;
    let proven = 0;
    let pausedAt = Infinity;
    let resumedAt = Infinity;
    let committedWhilePaused = 0;
    const lostAnswers: Array<'committed' | 'proven' | 'failed'> = [];
    const latePauseMs: number[] = [];
    let committedInPause = 0;
    let stalledInPause = 0;
    let stop = false;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < TXNS_MAX && !stop; i++) {
        const a = BigInt(w * 1_000_000 + 2 * i);
        const v = `writer ${w} txn ${i}`;
        const startedAt = performance.now();
        try {
          const txn = await client.beginTransaction();
          let commitStart = Infinity;
          try {
            await txn.insert(EXPERIMENT_TABLE, { id: a, v });
            await txn.insert(EXPERIMENT_TABLE, { id: a + 1n, v });
            commitStart = performance.now();
            await txn.commit();
          } catch (e) {
            // A commit that waited at least one attempt was sent to the paused leader.
            if (performance.now() - commitStart >= ATTEMPT_MS) lostAnswers.push(DbError.from(e).details['outcome'] === 'aborted' ? 'proven' : 'failed');
            await txn.abort().catch(() => undefined);
            throw e;
          }
          if (performance.now() - commitStart >= ATTEMPT_MS) lostAnswers.push('committed');
          committed++;
          committedRows.set(a, v).set(a + 1n, v);
          const now = performance.now();
          if (now > pausedAt + DEADLINE_MS && now < resumedAt) committedWhilePaused++;
          // The new leaders serve by then: how long a whole transaction takes while the old one stays paused.
          if (startedAt > pausedAt + DEADLINE_MS && now < resumedAt) latePauseMs.push(now - startedAt);
          if (now > pausedAt && now < resumedAt) {
            committedInPause++;
            // Began after the pause and waited at least one attempt: sent to the paused server.
            if (startedAt > pausedAt && now - startedAt >= ATTEMPT_MS) stalledInPause++;
          }
        } catch (e) {
          const err = DbError.from(e);
          if (err.details['outcome'] === 'unknown') {
            if (unknown.length < 3) unknown.push(`${err.code}: ${err.message}`);
            failures['outcome unknown'] = (failures['outcome unknown'] ?? 0) + 1;
            continue; // its rows may or may not exist
          }
          if (err.details['outcome'] === 'aborted') proven++;
          failures[err.code] = (failures[err.code] ?? 0) + 1;
          failedRows.add(a).add(a + 1n);
        }
      }
    });
    await new Promise((r) => setTimeout(r, BEFORE_MS));
    // The leader now (the master's leader balancing may have moved it since the lab started).
    const status = await statusLeaders();
    const [statusTablet, { node }] = status[0]!;
    victim = node;
    lab.log(`${node} leads status tablet ${statusTablet.slice(0, 8)} (of ${status.length})`);
    // Transactions whose records live on the leader alone, as a short transaction's do (their client
    // heartbeats rarely, so no heartbeat replicates a record before the commit, however slow the lab).
    const held = await Promise.all(
      Array.from({ length: HELD }, async (_, h) => {
        const id = BigInt(900_000_000 + 2 * h);
        const txn = await heldClient.beginTransaction();
        const v = `held ${h}`;
        await txn.insert(EXPERIMENT_TABLE, { id, v });
        await txn.insert(EXPERIMENT_TABLE, { id: id + 1n, v });
        return { txn, id, v };
      }),
    );
    await lab.driver.pause(node, 'tserver');
    pausedAt = performance.now();
    lab.log(`${node} tserver paused (SIGSTOP) for ${PAUSE_MS} ms, after ${committed} commits; ${HELD} transactions that wrote their rows just before commit now`);
    const heldOutcomes = Promise.all(
      held.map(async ({ txn, id, v }) => {
        try {
          await txn.commit();
          committedRows.set(id, v).set(id + 1n, v);
          return 'committed';
        } catch (e) {
          const err = DbError.from(e);
          if (err.details['outcome'] !== 'unknown') failedRows.add(id).add(id + 1n);
          return err.details['outcome'] === 'aborted' ? 'proven never committed' : `${err.code}${err.details['outcome'] === 'unknown' ? ' (outcome unknown)' : ''}`;
        }
      }),
    );
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    const successor = leadersByTablet(await replicasViaDriver(lab.driver).catch(() => [])).get(statusTablet)?.node;
    lab.log(`status tablet ${statusTablet.slice(0, 8)} is led by ${successor ?? 'nobody the other nodes know of'} now`);
    await lab.driver.resume(node, 'tserver');
    resumedAt = performance.now();
    lab.log(`${node} tserver resumed; ${committedWhilePaused} transactions committed while it was paused, past their deadline's worth of waiting`);
    await new Promise((r) => setTimeout(r, AFTER_MS));
    stop = true;
    await Promise.all(writers);
    const heldEnds = await heldOutcomes;
    lab.log(`the ${HELD} held transactions: ${heldEnds.join(', ')}`);
    const lost = { committed: lostAnswers.filter((x) => x === 'committed').length, proven: lostAnswers.filter((x) => x === 'proven').length, failed: lostAnswers.filter((x) => x === 'failed').length };
    lab.log(`writers' commits that waited on the paused leader (at least one ${ATTEMPT_MS} ms attempt): ${lost.committed} settled COMMITTED, ${lost.proven} proven never committed, ${lost.failed} failed otherwise`);
    const unknownCount = (failures['outcome unknown'] ?? 0) + heldEnds.filter((x) => x.endsWith('(outcome unknown)')).length;
    lab.log(`load done: ${committed} committed, failed ${JSON.stringify(failures)}; ${proven} commits whose answer was lost were proven never committed`);

    const rows = await lab.client.table(EXPERIMENT_TABLE).scan({ timeoutMs: 30_000 });
    const got = new Map(rows.map((r) => [r['id'] as bigint, r['v'] as string]));
    const missing = [...committedRows].filter(([k, v]) => got.get(k) !== v).length;
    const ghosts = [...failedRows].filter((k) => got.has(k)).length;
    let proofs = 0;
    for (const n of lab.driver.addresses()) {
      const body = (await lab.driver.consoleJson(n.name, 'tserver', '/api/v1/transactions', 5_000).catch(() => undefined)) as { coordinators?: Array<{ forgottenCommits?: { neverCommitted?: number } }> } | undefined;
      for (const c of body?.coordinators ?? []) proofs += c.forgottenCommits?.neverCommitted ?? 0;
    }
    lab.log(`the status tablet's replicas proved ${proofs} status answers "never committed" (console: /transactions, forgottenCommits.neverCommitted)`);

    checks.push({ name: 'no transaction ended "outcome unknown": each committed or failed definitely', ok: unknownCount === 0 && committed > 0, detail: `${committed} committed, failed ${JSON.stringify(failures)}${unknown.length > 0 ? `; first unknown: ${unknown.join(' | ')}` : ''}` });
    const heldProven = heldEnds.filter((x) => x === 'proven never committed').length;
    checks.push({ name: 'commits of transactions whose records lived on the paused leader alone were settled by its successor: proven never committed (TXN_ABORTED, outcome "aborted")', ok: heldProven === HELD && proofs >= proven + heldProven, detail: `held transactions: ${heldEnds.join(', ')}; ${proven + heldProven} commits in all failed with the proof; the status tablet replicas gave ${proofs} such answers` });
    checks.push({ name: 'transactions went on without the paused status tablet leader (committed while it was still paused, after a wait for it would have passed their deadline)', ok: committedWhilePaused > 0, detail: `${committedWhilePaused} transactions committed between ${DEADLINE_MS} ms after the pause and the resume` });
    checks.push({ name: 'the table holds exactly the committed transactions\' rows (none lost; none of a transaction that failed, proven or otherwise)', ok: missing === 0 && ghosts === 0 && committedRows.size > 0, detail: `${got.size} rows; ${missing} committed rows missing or different, ${ghosts} rows of failed transactions present` });
    figures['committed'] = committed;
    figures['lostAnswersSettledCommitted'] = lost.committed;
    figures['lostAnswersProvenNeverCommitted'] = lost.proven;
    figures['provenNeverCommitted'] = proven + heldProven;
    figures['outcomeUnknown'] = unknownCount;
    figures['committedWhilePaused'] = committedWhilePaused;
    figures['statusAnswersProven'] = proofs;
    const sorted = latePauseMs.sort((x, y) => x - y);
    const pct = (q: number): number => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
    figures['committedInPause'] = committedInPause;
    figures['stalledInPause'] = stalledInPause;
    figures['txnsLateInPause'] = sorted.length;
    figures['txnLateInPauseP50Ms'] = pct(0.5);
    figures['txnLateInPauseP99Ms'] = pct(0.99);
    figures['pauseMs'] = PAUSE_MS;
    return {
      name: 'paused-status-leader',
      title: 'Commits while the status tablet leader is paused: a lost commit answer, settled definitely',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets, 1 status tablet); ${WRITERS} writers run 2-row INSERT transactions with a ${DEADLINE_MS / 1000} s deadline per call, one attempt waiting at most ${ATTEMPT_MS} ms; the tserver leading the status tablet (${node}) is paused for ${PAUSE_MS / 1000} s, right after ${HELD} more transactions wrote their rows (they commit once it is paused).`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    if (victim) await lab.driver.resume(victim, 'tserver').catch(() => undefined);
    await client.close().catch(() => undefined);
    await heldClient.close().catch(() => undefined);
    await lab.close();
  }
}
