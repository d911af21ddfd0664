/**
 * The dependency direction of docs/architecture.md §Layers, enforced. This test reads every production
 * .ts file's imports and fails naming the offending import when:
 *  - a top-level folder imports a folder not listed for it (ALLOWED);
 *  - files import each other in a circle (any length, within or across folders). Type-only imports
 *    count: TypeScript erases them, but two files that each need the other's types still cannot be
 *    read, changed or moved apart — the shared types belong in a small leaf module both import;
 *  - a file outside raft/, docdb/ or rpc/ imports one of their files instead of their face, the
 *    folder's index.ts (`'../rpc'`, not `'../rpc/ws-transport'`): what a folder offers the others is
 *    what its index.ts exports;
 *  - docdb/encoding/ imports anything of ours but common/ (it stands alone, like YugabyteDB's dockv).
 * Only production folders are checked: tests (test/) may import any file directly, since a test of a
 * part exercises that part, faces or not.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
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

/** The relative module specifiers a file imports or re-exports (type-only ones too). */
function importSpecs(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of src.matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)|require\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    specs.push(m[1] ?? m[2] ?? m[3]!);
  }
  return specs;
}

export function layeringViolations(root: string): string[] {
  const bad: string[] = [];
  for (const [folder, allowed] of Object.entries(ALLOWED)) {
    for (const file of tsFiles(path.join(root, folder))) {
      for (const spec of importSpecs(file)) {
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

/** Folders other folders reach only through their index.ts. */
const FACES = ['raft', 'docdb', 'rpc'];

/**
 * Files allowed, for a while, to import raft/, docdb/ or rpc/ files directly (while other work changes
 * them). Empty now: every production file goes through the faces. The test fails when a listed file
 * no longer needs its place here, so the list only shrinks.
 */
const DEEP_IMPORTS_PENDING = new Set<string>([]);

const posix = (p: string): string => p.split(path.sep).join('/');

/** The file a relative specifier names (`x` → x.ts, or x/index.ts), relative to root; undefined if none. */
function resolveSpec(root: string, fromFile: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(fromFile), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return posix(path.relative(root, candidate));
  }
  return undefined;
}

/** Every production file's imports, as root-relative paths of the files they name. */
function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of Object.keys(ALLOWED)) {
    for (const file of tsFiles(path.join(root, folder))) {
      const targets = importSpecs(file).flatMap((s) => resolveSpec(root, file, s) ?? []);
      graph.set(posix(path.relative(root, file)), targets);
    }
  }
  return graph;
}

/** The import cycles among production files: each strongly connected group of files (Tarjan), sorted. */
export function importCycles(root: string): string[][] {
  const graph = importGraph(root);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    for (;;) {
      const w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
      if (w === v) break;
    }
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/** Imports from other folders that bypass the index.ts of raft/, docdb/ or rpc/ (listed pending files apart). */
export function deepImports(root: string, pending: ReadonlySet<string> = new Set()): string[] {
  const bad: string[] = [];
  for (const [file, targets] of importGraph(root)) {
    const top = file.split('/')[0]!;
    if (pending.has(file)) continue;
    for (const target of targets) {
      const face = target.split('/')[0]!;
      if (face !== top && FACES.includes(face) && target !== `${face}/index.ts`) bad.push(`${file} imports ${target}: import '${face}' (its index.ts) instead`);
    }
  }
  return bad;
}

/** docdb/encoding/ files that import anything of ours outside docdb/encoding/ and common/. */
export function encodingImports(root: string): string[] {
  const bad: string[] = [];
  for (const [file, targets] of importGraph(root)) {
    if (!file.startsWith('docdb/encoding/')) continue;
    for (const t of targets) if (!t.startsWith('docdb/encoding/') && !t.startsWith('common/')) bad.push(`${file} imports ${t}`);
  }
  return bad;
}

/**
 * tserver/tablet/ files that import tserver/transaction/: the tablet (with its participant side) is
 * below the coordinator, which reaches the tablet through its events interface (docs/architecture.md
 * §Tablet), never the other way round.
 */
export function tabletImportsTransaction(root: string): string[] {
  const bad: string[] = [];
  for (const [file, targets] of importGraph(root)) {
    if (!file.startsWith('tserver/tablet/')) continue;
    for (const t of targets) if (t.startsWith('tserver/transaction/')) bad.push(`${file} imports ${t}`);
  }
  return bad;
}

/** A throwaway tree of production-folder files (path → source), for the tests of the checks themselves. */
function withTree(files: Record<string, string>, check: (root: string) => void): void {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layer-'));
  try {
    for (const [p, src] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(tmp, p)), { recursive: true });
      fs.writeFileSync(path.join(tmp, p), src);
    }
    check(tmp);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

describe('layering', () => {
  it('layering: every folder imports only what docs/architecture.md §Layers allows', () => {
    expect(layeringViolations(ROOT)).toEqual([]);
  });

  it('layering: a raft/ file importing docdb/ is caught', () => {
    withTree({ 'docdb/x.ts': 'export const x = 1;\n', 'raft/bad.ts': "import { x } from '../docdb/x';\nexport const y = x;\n" }, (root) => {
      const v = layeringViolations(root);
      expect(v).toHaveLength(1);
      expect(v[0]).toContain('raft/bad.ts imports ../docdb/x');
    });
  });

  it('layering: no production file takes part in an import cycle (type-only imports count)', () => {
    expect(importCycles(ROOT)).toEqual([]);
  });

  it('layering: a cycle is caught, also one of type-only imports through an index.ts', () => {
    withTree(
      {
        'lab/a.ts': "import type { B } from './b';\nexport interface A { b?: B }\n",
        'lab/b.ts': "import type { C } from './sub';\nexport interface B { c?: C }\n",
        'lab/sub/index.ts': "export * from './c';\n",
        'lab/sub/c.ts': "import type { A } from '../a';\nexport interface C { a?: A }\n",
        'lab/leaf.ts': "import type { A } from './a';\nexport type L = A;\n",
      },
      (root) => expect(importCycles(root)).toEqual([['lab/a.ts', 'lab/b.ts', 'lab/sub/c.ts', 'lab/sub/index.ts']]),
    );
  });

  it('layering: other folders import raft/, docdb/ and rpc/ only through their index.ts', () => {
    expect(deepImports(ROOT, DEEP_IMPORTS_PENDING)).toEqual([]);
  });

  it('layering: every file on the pending list still imports past a face (else take it off the list)', () => {
    const all = deepImports(ROOT);
    const stale = [...DEEP_IMPORTS_PENDING].filter((f) => all.every((v) => !v.startsWith(`${f} `)));
    expect(stale).toEqual([]);
  });

  it('layering: a deep import is caught, the face and a folder\'s own files are not', () => {
    withTree(
      {
        'rpc/index.ts': "export * from './types';\n",
        'rpc/types.ts': 'export type T = number;\n',
        'rpc/other.ts': "import type { T } from './types';\nexport type O = T;\n",
        'client/good.ts': "import type { T } from '../rpc';\nexport type G = T;\n",
        'client/bad.ts': "import type { T } from '../rpc/types';\nexport type B = T;\n",
      },
      (root) => expect(deepImports(root)).toEqual(["client/bad.ts imports rpc/types.ts: import 'rpc' (its index.ts) instead"]),
    );
  });

  it('layering: docdb/encoding/ stands alone (imports only itself and common/)', () => {
    expect(encodingImports(ROOT)).toEqual([]);
  });

  it('layering: tserver/tablet/ never imports tserver/transaction/ (the coordinator depends on the tablet, one way)', () => {
    expect(tabletImportsTransaction(ROOT)).toEqual([]);
    withTree(
      {
        'tserver/transaction/coordinator.ts': "import type { P } from '../tablet/peer';\nexport type C = P;\n",
        'tserver/tablet/peer.ts': 'export type P = number;\n',
        'tserver/tablet/bad.ts': "import type { C } from '../transaction/coordinator';\nexport type B = C;\n",
      },
      (root) => expect(tabletImportsTransaction(root)).toEqual(['tserver/tablet/bad.ts imports tserver/transaction/coordinator.ts']),
    );
  });
});
