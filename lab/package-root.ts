/** The folder holding tessera's package.json, found from this compiled file (dist/lab/ -> ../..). */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common';

const LEVELS_MAX = 6;
let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  for (let i = 0; i < LEVELS_MAX; i++) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj)) {
      try {
        const name: unknown = (JSON.parse(fs.readFileSync(pj, 'utf8')) as Record<string, unknown>)['name'];
        if (name === 'tessera') return (cached = dir);
      } catch {
        // not ours; keep climbing
      }
    }
    dir = path.dirname(dir);
  }
  throw new DbError(ErrorCode.NOT_FOUND, `cannot find tessera's package.json above ${__dirname}`);
}

/** Absolute path of a server entry script, failing clearly when the project was not built. */
export function serverEntryPath(entry: string): string {
  const abs = path.resolve(packageRoot(), entry);
  if (!fs.existsSync(abs)) {
    throw new DbError(ErrorCode.NOT_FOUND, `server entry ${entry} not found under ${packageRoot()}: build first (npx tsc -b)`);
  }
  return abs;
}
