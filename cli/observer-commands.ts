/**
 * `tessera observers run --app FILE.js`: a Percolator observer worker (docs/percolator.md). FILE.js
 * is a CommonJS module exporting `observers: [{ name, table, run(txn, key, row) }]`; the worker
 * scans the observers' tables for notify hints and runs each in a Percolator transaction, pass
 * after pass, until SIGINT/SIGTERM or --passes.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import { DbError, ErrorCode } from '../common/errors';
import { ObserverRunner, type Observer } from '../client/percolator/observer-runner';
import { common, timeout, type CommonOpts } from './data-commands';
import { print, printJson, withClient } from './cli-io';

function loadApp(file: string): Observer[] {
  let mod: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require(path.resolve(file)) as unknown;
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot load observer app ${file}: ${(e as Error).message}`);
  }
  const obs = (mod as { observers?: unknown } | undefined)?.observers;
  if (!Array.isArray(obs)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${file} does not export observers: [{ name, table, run }]`);
  return obs as Observer[];
}

export function registerObserverCommands(program: Command): void {
  const obs = program.command('observers').description('Percolator observers (docs/percolator.md)');
  common(obs.command('run').description('run observer workers: scan notify hints, run each observer in a Percolator transaction'))
    .requiredOption('--app <file>', 'CommonJS module exporting observers: [{ name, table, run(txn, key, row) }]')
    .option('--passes <n>', 'stop after this many passes (default: until SIGINT/SIGTERM)')
    .option('--interval_ms <ms>', 'pause between passes that found nothing', '500')
    .action(async (o: CommonOpts & { app: string; passes?: string; interval_ms: string }) => {
      const observers = loadApp(o.app);
      const passes = o.passes === undefined ? Number.POSITIVE_INFINITY : Number(o.passes);
      const intervalMs = Number(o.interval_ms);
      if (!(passes >= 1) || !(intervalMs >= 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--passes must be >= 1 and --interval_ms >= 0');
      let stop = false;
      const onSignal = (): void => {
        stop = true;
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      await withClient(o, timeout(o), async (c) => {
        const runner = new ObserverRunner({ percolator: c.percolator, table: (n) => c.table(n), random: Math.random }, observers);
        for (let i = 0; i < passes && !stop; i++) {
          const r = await runner.runPass();
          if (o.json) printJson({ pass: i + 1, ...r });
          else print(`pass ${i + 1}: ${r.runs} runs committed, ${r.acknowledged} hints already acknowledged, ${r.conflicts} conflicts, ${r.failures} observer failures`);
          if (r.runs + r.conflicts + r.failures === 0 && i + 1 < passes && !stop) await new Promise((res) => setTimeout(res, intervalMs));
        }
      });
    });
}
