/**
 * online-schema-change: ALTER TABLE while clients write, with one replica away. A write load (two
 * clients: the one that alters and one connected before the change that is never told) runs on the
 * table; n2's tserver is paused; the table gets a new column. The change must reach every tablet's
 * leader while the load goes on, no operation may fail (clients meet SCHEMA_VERSION_MISMATCH and
 * rebuild their operations with the new schema, or reload it when a row names the new column), the
 * uninformed client must write the new column, and n2, resumed, must take the change when Raft
 * catches it up (its replicas reach the new schema version). Old rows read the new column as null.
 */
import type { Row } from '../../client/client-types';
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { labConnectOptions } from '../cluster-driver';
import { waitUntil } from '../wait-until';
import type { Check, ExperimentOptions, ExperimentResult } from './experiment';
import { EXPERIMENT_TABLE, openExperimentLab } from './experiment-lab';

/** Writers per client; each writes rows of its own id range. */
const WRITERS = 4;
const LOAD_MS = 6_000;
/**
 * The load goes on past LOAD_MS (up to this) until each client has written this many rows after the
 * ALTER: on a busy machine the ALTER itself took 5.9 s once, and the load ended before any write
 * after it (a condition, not a longer fixed time).
 */
const LOAD_MS_MAX = 60_000;
const AFTER_ALTER_MIN_PER_CLIENT = 20;
/** When the ALTER starts, from the load's start. */
const ALTER_AT_MS = 2_000;
/** Writes per writer at most (the load's time usually ends it first). */
const WRITES_MAX = 20_000;
const PRELOAD_ROWS = 200;
const NEW_COLUMN = 'note';

interface Load {
  ok: number;
  okAfterAlter: number;
  failures: Record<string, number>;
  /** Rows written with the new column, by client. */
  withNote: Record<string, number>;
}

// Long by design (docs/conventions.md): an experiment is a script read top to bottom, its steps the sections of its report; cutting it into functions would hide the order the report follows.
export async function onlineSchemaChange(o: ExperimentOptions): Promise<ExperimentResult> {
  const lab = await openExperimentLab(o, 'online-schema-change');
  const checks: Check[] = [];
  const figures: Record<string, number | string> = {};
  // A second client, connected (and its schema loaded) before the change; nobody tells it.
  const uninformed = await TesseraClient.connect({ ...labConnectOptions(lab.driver.addresses()), timeoutMs: 30_000 });
  try {
    const t = lab.client.table(EXPERIMENT_TABLE);
    await t.upsertMany(Array.from({ length: PRELOAD_ROWS }, (_, i) => ({ id: BigInt(i), v: `old ${i}` })));
    await uninformed.table(EXPERIMENT_TABLE).get({ id: 0n });
    lab.log(`${PRELOAD_ROWS} rows written; a second client loaded the table's schema (version 0)`);
    await lab.driver.pause('n2', 'tserver');
    lab.log('n2 tserver paused (SIGSTOP): its replicas will miss the ALTER while away');

    let altered = false;
    const load: Load = { ok: 0, okAfterAlter: 0, failures: {}, withNote: {} };
    const start = performance.now();
    const writers = (['altering', 'uninformed'] as const).flatMap((who, ci) =>
      Array.from({ length: WRITERS }, async (_, w) => {
        const client = who === 'altering' ? lab.client : uninformed;
        const base = 1_000_000 * (1 + ci * WRITERS + w);
        const more = (): boolean => {
          const t = performance.now() - start;
          return t < LOAD_MS || (t < LOAD_MS_MAX && (load.withNote[who] ?? 0) < AFTER_ALTER_MIN_PER_CLIENT);
        };
        for (let i = 0; i < WRITES_MAX && more(); i++) {
          // After the ALTER each writer also sets the new column (the uninformed client's schema lacks it).
          const withNote = altered;
          const row: Row = { id: BigInt(base + i), v: `${who} ${i}` };
          if (withNote) row[NEW_COLUMN] = `${who} after the ALTER`;
          try {
            await client.table(EXPERIMENT_TABLE).upsert(row);
            load.ok++;
            if (withNote) {
              load.okAfterAlter++;
              load.withNote[who] = (load.withNote[who] ?? 0) + 1;
            }
          } catch (e) {
            const code = e instanceof DbError ? e.code : 'ERROR';
            load.failures[code] = (load.failures[code] ?? 0) + 1;
          }
        }
      }),
    );
    const alter = (async () => {
      await new Promise((r) => setTimeout(r, ALTER_AT_MS));
      lab.log(`ALTER TABLE ${EXPERIMENT_TABLE} ADD COLUMN ${NEW_COLUMN} string, under the write load`);
      const t0 = performance.now();
      let shown = -1;
      const r = await lab.client.alterTable(EXPERIMENT_TABLE, { addColumns: [{ name: NEW_COLUMN, type: 'string' }] }, {
        timeoutMs: 30_000,
        onProgress: (p) => {
          if (p.tabletsDone === shown) return;
          shown = p.tabletsDone;
          lab.log(`schema version ${p.schemaVersion}: served by the leaders of ${p.tabletsDone} of ${p.tablets} tablets`);
        },
      });
      altered = true;
      const ms = performance.now() - t0;
      lab.log(`ALTER done in ${ms.toFixed(0)} ms (schema version ${r.schemaVersion} on every tablet's leader); writers now set ${NEW_COLUMN}`);
      return { ms, version: r.schemaVersion };
    })();
    const [a] = await Promise.all([alter, ...writers]);
    lab.log(`load done: ${load.ok} writes ok (${load.okAfterAlter} after the ALTER, with ${NEW_COLUMN}), failed: ${JSON.stringify(load.failures)}`);

    const table = (await lab.driver.consoleJson('n0', 'master', `/api/v1/table?name=${EXPERIMENT_TABLE}`, 5_000)) as { schemaVersion: number; tabletsOnSchemaVersion: number; tablets: unknown[] };
    const versionsOf = async (node: 'n0' | 'n1' | 'n2'): Promise<number[] | undefined> => {
      try {
        const body = (await lab.driver.consoleJson(node, 'tserver', '/api/v1/tablets', 2_000)) as { tablets: Array<{ table: string; schemaVersion?: number }> };
        return body.tablets.filter((x) => x.table === EXPERIMENT_TABLE).map((x) => x.schemaVersion ?? 0);
      } catch {
        return undefined;
      }
    };
    const before = { n0: await versionsOf('n0'), n1: await versionsOf('n1') };
    lab.log(`replica schema versions: n0 ${JSON.stringify(before.n0)}, n1 ${JSON.stringify(before.n1)}, n2 paused`);
    await lab.driver.resume('n2', 'tserver');
    lab.log('n2 tserver resumed');
    const t1 = performance.now();
    let n2: number[] | undefined;
    await waitUntil(async () => {
      n2 = await versionsOf('n2');
      return n2 !== undefined && n2.length === 3 && n2.every((v) => v === a.version);
    }, { timeoutMs: 60_000, intervalMs: 200, what: `n2's replicas on schema version ${a.version}` }).catch(() => undefined);
    const catchUpMs = performance.now() - t1;
    lab.log(`n2 replica schema versions after resume: ${JSON.stringify(n2)} (${catchUpMs.toFixed(0)} ms)`);

    const oldRow = await t.get({ id: 1n });
    const scanned = await t.scan({ timeoutMs: 30_000 });
    const noteRows = scanned.filter((r) => r[NEW_COLUMN] !== null && r[NEW_COLUMN] !== undefined).length;

    checks.push({ name: 'the ALTER reached every tablet\'s leader while the load ran (catalog and tablets on the new schema version)', ok: table.schemaVersion === a.version && table.tabletsOnSchemaVersion === table.tablets.length && a.version === 1, detail: `schema version ${table.schemaVersion}, served by ${table.tabletsOnSchemaVersion} of ${table.tablets.length} tablets; ALTER took ${a.ms.toFixed(0)} ms` });
    checks.push({ name: 'no write failed: clients rebuilt their operations with the new schema by themselves', ok: Object.keys(load.failures).length === 0 && load.ok > 0 && load.okAfterAlter > 0, detail: `${load.ok} writes ok (${load.okAfterAlter} with ${NEW_COLUMN}); failed: ${JSON.stringify(load.failures)}` });
    checks.push({ name: 'the client nobody told wrote the new column (it reloaded the schema when a row named it)', ok: (load.withNote['uninformed'] ?? 0) > 0, detail: `rows with ${NEW_COLUMN}: altering client ${load.withNote['altering'] ?? 0}, uninformed client ${load.withNote['uninformed'] ?? 0}` });
    checks.push({ name: 'the replica that was away (n2) took the change when Raft caught it up (it applies the CHANGE_SCHEMA entry like any other)', ok: n2 !== undefined && n2.length === 3 && n2.every((v) => v === a.version), detail: `n2 schema versions ${JSON.stringify(n2)} ${catchUpMs.toFixed(0)} ms after resume (n0 ${JSON.stringify(before.n0)}, n1 ${JSON.stringify(before.n1)} before)` });
    checks.push({ name: `old rows read ${NEW_COLUMN} as null; every row written after the ALTER has it`, ok: oldRow !== undefined && (oldRow[NEW_COLUMN] ?? null) === null && noteRows === load.okAfterAlter && scanned.length === PRELOAD_ROWS + load.ok, detail: `row 1: ${JSON.stringify(oldRow, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}; ${noteRows} rows with ${NEW_COLUMN} of ${scanned.length}` });
    figures['alterMs'] = Math.round(a.ms);
    figures['writesOk'] = load.ok;
    figures['writesWithNewColumn'] = load.okAfterAlter;
    figures['writesFailed'] = Object.values(load.failures).reduce((s, n) => s + n, 0);
    figures['n2CatchUpMs'] = Math.round(catchUpMs);
    return {
      name: 'online-schema-change',
      title: 'ALTER TABLE under a write load, with a replica away',
      summary: `A 3-node ${lab.driver.kind} lab (RF 3, 3 tablets); ${2 * WRITERS} writers on two clients (one connected before the change and never told) upsert for ${LOAD_MS / 1000} s; n2's tserver is paused; ${ALTER_AT_MS / 1000} s in, the table gets a column.`,
      checks,
      figures,
      timeline: lab.timeline,
    };
  } finally {
    await lab.driver.resume('n2', 'tserver').catch(() => undefined);
    await uninformed.close().catch(() => undefined);
    await lab.close();
  }
}
