/**
 * wait-on-conflict: a hot row under two conflict policies. Concurrent clients increment one counter
 * with serializable read-modify-write transactions for a few seconds, first with fail-on-conflict
 * (the default: the lower priority fails at once with TXN_CONFLICT), then with `enable_wait_queues`
 * set on every tserver (the lower-ranked transaction waits for the holder; a higher-ranked one still
 * aborts it: wound-wait). Each phase must lose no increment — the counter equals the commits — and the
 * report gives commits, failures by code and latency for both, so the two policies can be compared on
 * the same cluster.
 */
import * as hdr from 'hdr-histogram-js';
import { DbError } from '../../common/errors';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab, type ExperimentLab } from './experiment-lab';

const CLIENTS = 8;
const PHASE_MS = 4_000;
/** Attempts per client per phase at most (the phase's time usually ends it first). */
const ATTEMPTS_MAX = 5_000;
const COUNTER_ID = 1n;

interface Phase {
  ok: number;
  failures: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  counterBefore: number;
  counterAfter: number;
}

async function counter(lab: ExperimentLab): Promise<number> {
  return Number((await lab.client.table(EXPERIMENT_TABLE).get({ id: COUNTER_ID }))?.['v'] ?? 0);
}

async function runPhase(lab: ExperimentLab): Promise<Phase> {
  const counterBefore = await counter(lab);
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });
  const failures: Record<string, number> = {};
  let ok = 0;
  const end = performance.now() + PHASE_MS;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = 0; i < ATTEMPTS_MAX && performance.now() < end; i++) {
        const t0 = performance.now();
        const txn = await lab.client.beginTransaction({ isolation: 'serializable', timeoutMs: 5_000 });
        try {
          const t = txn.table(EXPERIMENT_TABLE);
          const v = Number((await t.get({ id: COUNTER_ID }))?.['v'] ?? 0);
          await t.upsert({ id: COUNTER_ID, v: String(v + 1) });
          await txn.commit();
          ok++;
          h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
        } catch (e) {
          const code = e instanceof DbError ? e.code : 'ERROR';
          failures[code] = (failures[code] ?? 0) + 1;
          await txn.abort().catch(() => undefined);
        }
      }
    }),
  );
  const r = { ok, failures, p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, counterBefore, counterAfter: await counter(lab) };
  h.destroy();
  return r;
}

const show = (p: Phase): string =>
  `${p.ok} commits (${((p.ok * 1000) / PHASE_MS).toFixed(0)}/s), failed: ${Object.entries(p.failures).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}; commit latency p50 ${p.p50Ms.toFixed(1)} ms, p99 ${p.p99Ms.toFixed(1)} ms; counter ${p.counterBefore} → ${p.counterAfter}`;

export async function waitOnConflict(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'wait-on-conflict');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  try {
    await lab.client.table(EXPERIMENT_TABLE).upsert({ id: COUNTER_ID, v: '0' });
    lab.log(`fail-on-conflict: ${CLIENTS} clients increment one counter with serializable read-modify-writes for ${PHASE_MS} ms`);
    const a = await runPhase(lab);
    lab.log(`fail-on-conflict: ${show(a)}`);
    for (const node of ['n0', 'n1', 'n2']) await lab.driver.setFlag(node, 'enable_wait_queues', 'true', false, 'tserver');
    lab.log('enable_wait_queues=true on every tserver (wait-on-conflict, wound-wait)');
    const b = await runPhase(lab);
    lab.log(`wait-on-conflict: ${show(b)}`);
    const conflicts = (p: Phase): number => p.failures['TXN_CONFLICT'] ?? 0;
    checks.push({ name: 'fail-on-conflict: no increment lost (counter = commits), and the row was contended (some TXN_CONFLICT)', ok: a.counterAfter - a.counterBefore === a.ok && a.ok > 0 && conflicts(a) > 0, detail: show(a) });
    checks.push({ name: 'wait-on-conflict: no increment lost (counter = commits)', ok: b.counterAfter - b.counterBefore === b.ok && b.ok > 0, detail: show(b) });
    checks.push({ name: 'wait-on-conflict: lower-ranked transactions wait instead of failing (fewer TXN_CONFLICT than fail-on-conflict)', ok: conflicts(b) < conflicts(a), detail: `TXN_CONFLICT ${conflicts(a)} → ${conflicts(b)}; TXN_ABORTED (wounded by a higher rank) ${a.failures['TXN_ABORTED'] ?? 0} → ${b.failures['TXN_ABORTED'] ?? 0}` });
    figures['failOnConflictCommits'] = a.ok;
    figures['waitOnConflictCommits'] = b.ok;
    figures['failOnConflictFailures'] = JSON.stringify(a.failures);
    figures['waitOnConflictFailures'] = JSON.stringify(b.failures);
    figures['failOnConflictP50Ms'] = Number(a.p50Ms.toFixed(1));
    figures['waitOnConflictP50Ms'] = Number(b.p50Ms.toFixed(1));
    return {
      name: 'wait-on-conflict',
      title: 'A hot row under fail-on-conflict and wait-on-conflict (enable_wait_queues)',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets); ${CLIENTS} clients increment one counter row with serializable read-modify-write transactions for ${PHASE_MS / 1000} s under each policy.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.close();
  }
}
