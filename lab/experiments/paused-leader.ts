/**
 * paused-leader: retryable requests, seen by a user. Writers INSERT fresh rows (an INSERT is not
 * idempotent: done twice, it answers ALREADY_EXISTS to a write that succeeded) with a 5 s deadline,
 * and the tserver leading the most tablets is paused (SIGSTOP: it keeps its connections and answers
 * nothing) for 8 s — longer than the deadline. Each attempt gives up on the paused leader after
 * 1 s and the INSERT is resent, with the same request id, until the other replicas have elected a
 * leader; that leader answers a copy of an INSERT the old leader had already replicated with its
 * first answer instead of inserting again. Checks: no INSERT failed, INSERTs completed while the old
 * leader was still paused, and the table holds exactly the acknowledged rows; the replicas' consoles
 * count the copies they answered.
 */
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { labConnectOptions } from '../cluster-driver';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';

const WRITERS = 8;
/** Each INSERT's deadline (retries included): shorter than the pause. */
const INSERT_DEADLINE_MS = 5_000;
/** One attempt's wait for an answer before the INSERT is resent. */
const ATTEMPT_MS = 1_000;
const PAUSE_MS = 8_000;
/** The load runs this long before the pause and after the resume. */
const BEFORE_MS = 1_500;
const AFTER_MS = 2_000;
/** INSERTs per writer at most (the load's time usually ends it first). */
const INSERTS_MAX = 20_000;

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function pausedLeader(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'paused-leader');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  const client = await TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: INSERT_DEADLINE_MS, rpcSingleCallTimeoutMs: ATTEMPT_MS });
  let victim: string | undefined;
  try {
    const leaders = await lab.leaders();
    const led = new Map<string, number>();
    for (const [, l] of leaders) led.set(l.node, (led.get(l.node) ?? 0) + 1);
    const [node, count] = [...led.entries()].sort((a, b) => b[1] - a[1])[0]!;
    victim = node;
    lab.log(`${node} leads ${count} of ${leaders.length} tablets of ${EXPERIMENT_TABLE}; ${WRITERS} writers INSERT fresh rows (deadline ${INSERT_DEADLINE_MS} ms, one attempt ${ATTEMPT_MS} ms)`);

    const acked = new Map<bigint, string>();
    const failures: Record<string, number> = {};
    const firstFailures: string[] = [];
    let pausedAt = Infinity;
    let resumedAt = Infinity;
    let duringPause = 0;
    let stop = false;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < INSERTS_MAX && !stop; i++) {
        const id = BigInt(w * 1_000_000 + i);
        const v = `writer ${w} insert ${i}`;
        try {
          await client.table(EXPERIMENT_TABLE).insert({ id, v });
          acked.set(id, v);
          const now = performance.now();
          // Acknowledged after a wait on the paused leader would have timed out, before it came back.
          if (now > pausedAt + INSERT_DEADLINE_MS && now < resumedAt) duringPause++;
        } catch (e) {
          const code = e instanceof DbError ? e.code : 'ERROR';
          failures[code] = (failures[code] ?? 0) + 1;
          if (firstFailures.length < 3) firstFailures.push(`${code}: ${(e as Error).message}`);
        }
      }
    });
    await new Promise((r) => setTimeout(r, BEFORE_MS));
    await lab.driver.pause(node, 'tserver');
    pausedAt = performance.now();
    lab.log(`${node} tserver paused (SIGSTOP) for ${PAUSE_MS} ms, after ${acked.size} INSERTs`);
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    await lab.driver.resume(node, 'tserver');
    resumedAt = performance.now();
    lab.log(`${node} tserver resumed; ${duringPause} INSERTs were acknowledged while it was paused, past their deadline's worth of waiting`);
    await new Promise((r) => setTimeout(r, AFTER_MS));
    stop = true;
    await Promise.all(writers);
    const failed = Object.values(failures).reduce((s, n) => s + n, 0);
    lab.log(`load done: ${acked.size} INSERTs acknowledged, ${failed} failed ${JSON.stringify(failures)}`);

    const rows = await lab.client.table(EXPERIMENT_TABLE).scan({ timeoutMs: 30_000 });
    const got = new Map(rows.map((r) => [r['id'] as bigint, r['v'] as string]));
    const missing = [...acked].filter(([k, v]) => got.get(k) !== v).length;
    const extra = [...got.keys()].filter((k) => !acked.has(k)).length;
    let copies = 0;
    for (const n of lab.driver.addresses()) {
      for (const [tabletId] of leaders) {
        const body = (await lab.driver.consoleJson(n.name, 'tserver', `/api/v1/tablet?id=${tabletId}`, 5_000).catch(() => undefined)) as { retryable?: { duplicates?: number } } | undefined;
        copies += body?.retryable?.duplicates ?? 0;
      }
    }
    lab.log(`the replicas answered ${copies} resent copies without doing them again (console: /api/v1/tablet retryable.duplicates)`);

    checks.push({ name: 'no INSERT failed: none timed out waiting for the paused leader, none met its own row (ALREADY_EXISTS)', ok: failed === 0 && acked.size > 0, detail: `${acked.size} acknowledged, ${failed} failed ${JSON.stringify(failures)}${firstFailures.length > 0 ? `; first: ${firstFailures.join(' | ')}` : ''}` });
    checks.push({ name: 'INSERTs went on without the paused leader (acknowledged while it was still paused, after a wait for it would have passed their deadline)', ok: duringPause > 0, detail: `${duringPause} INSERTs acknowledged between ${INSERT_DEADLINE_MS} ms after the pause and the resume` });
    checks.push({ name: 'the table holds exactly the acknowledged rows (nothing lost, nothing inserted that was not acknowledged)', ok: missing === 0 && extra === 0 && got.size === acked.size, detail: `${got.size} rows; ${missing} acknowledged rows missing or different, ${extra} rows not acknowledged` });
    figures['insertsOk'] = acked.size;
    figures['insertsFailed'] = failed;
    figures['insertsDuringPause'] = duringPause;
    figures['copiesAnswered'] = copies;
    figures['pauseMs'] = PAUSE_MS;
    return {
      name: 'paused-leader',
      title: 'INSERTs while a tablet leader is paused longer than their deadline (retryable requests)',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets); ${WRITERS} writers INSERT fresh rows with a ${INSERT_DEADLINE_MS / 1000} s deadline, one attempt waiting at most ${ATTEMPT_MS} ms; the tserver leading the most tablets (${node}) is paused for ${PAUSE_MS / 1000} s.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    if (victim) await lab.driver.resume(victim, 'tserver').catch(() => undefined);
    await client.close().catch(() => undefined);
    await lab.close();
  }
}
