/**
 * The dependency direction of DESIGN §1, enforced: each top-level folder may import only the folders
 * listed for it. This test reads every .ts file's imports and fails naming the offending import.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const ALLOWED: Record<string, string[]> = {
  common: [],
  rpc: ['common'],
  raft: ['common'],
  docdb: ['common'],
  tserver: ['common', 'rpc', 'raft', 'docdb', 'tserver'],
  master: ['common', 'rpc', 'raft', 'docdb', 'master'],
  client: ['common', 'rpc', 'client'],
  sql: ['common', 'rpc', 'client', 'sql'],
  cli: ['common', 'rpc', 'raft', 'docdb', 'tserver', 'master', 'client', 'sql', 'cli', 'lab', 'bench'],
  lab: ['common', 'rpc', 'raft', 'docdb', 'tserver', 'master', 'client', 'lab'],
  bench: ['common', 'rpc', 'raft', 'docdb', 'tserver', 'master', 'client', 'lab', 'bench'],
};

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

export function layeringViolations(root: string): string[] {
  const bad: string[] = [];
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    for (const file of tsFiles(path.join(root, folder))) {
      const src = fs.readFileSync(file, 'utf8');
      for (const m of src.matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)|require\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
        const spec = m[1] ?? m[2] ?? m[3]!;
        const target = path.relative(root, path.resolve(path.dirname(file), spec));
        const top = target.split(path.sep)[0]!;
        if (top === folder || top.startsWith('..')) continue;
        // raft/ and docdb/ are pure leaves: within them, subfolders are fine; across them, never.
        if (!allowed.includes(top)) bad.push(`${path.relative(root, file)} imports ${spec} (${top}/ is not allowed from ${folder}/)`);
      }
    }
  }
  return bad;
}

describe('layering', () => {
  it('layering: every folder imports only what DESIGN §1 allows', () => {
    expect(layeringViolations(ROOT)).toEqual([]);
  });

  it('layering: a raft/ file importing docdb/ is caught', () => {
    const tmp = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'layer-'));
    fs.mkdirSync(path.join(tmp, 'raft'));
    fs.mkdirSync(path.join(tmp, 'docdb'));
    fs.writeFileSync(path.join(tmp, 'docdb', 'x.ts'), 'export const x = 1;\n');
    fs.writeFileSync(path.join(tmp, 'raft', 'bad.ts'), "import { x } from '../docdb/x';\nexport const y = x;\n");
    const v = layeringViolations(tmp);
    fs.rmSync(tmp, { recursive: true, force: true });
    expect(v).toHaveLength(1);
    expect(v[0]).toContain('raft/bad.ts imports ../docdb/x');
  });
});
