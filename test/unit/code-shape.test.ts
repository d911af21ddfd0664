/**
 * The shape docs/conventions.md asks of production code ("Shape"): files near 500 lines, functions
 * near 70 (TigerBeetle's limit). A longer function must say why in a comment right above it that
 * starts `Long by design`. This test reads every production .ts file with TypeScript's parser and
 * names each function over the limit without that comment, and each file over the file limit.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const PRODUCTION = ['common', 'rpc', 'raft', 'docdb', 'tserver', 'master', 'client', 'sql', 'cli', 'lab', 'bench'];
const FUNCTION_LINES_MAX = 70;
/** "Near 500": a file may pass it by a little while a change lands, not by a part's worth. */
const FILE_LINES_MAX = 540;
const REASON = 'Long by design';

function productionFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const d of PRODUCTION) walk(path.join(ROOT, d));
  return out;
}

/** Functions of `text` over `max` lines with no `Long by design` comment in the 3 lines above them (an enclosing one counts). */
export function longFunctions(file: string, text: string, max = FUNCTION_LINES_MAX): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lines = text.split('\n');
  const excused = (line: number): boolean => lines.slice(Math.max(0, line - 3), line).some((l) => l.includes(REASON));
  const out: string[] = [];
  const visit = (n: ts.Node, inExcused: boolean): void => {
    let here = inExcused;
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n)) && n.body) {
      const first = src.getLineAndCharacterOfPosition(n.getStart()).line;
      const last = src.getLineAndCharacterOfPosition(n.end).line;
      here = here || excused(first);
      if (last - first + 1 > max && !here) out.push(`${path.relative(ROOT, file)}:${first + 1} (${last - first + 1} lines)`);
    }
    ts.forEachChild(n, (c) => visit(c, here));
  };
  visit(src, false);
  return out;
}

describe('code shape', () => {
  it('shape: no production function over 70 lines unless a "Long by design" comment above it says why', () => {
    const offenders = productionFiles().flatMap((f) => longFunctions(f, fs.readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('shape: no production file far past 500 lines', () => {
    const big = productionFiles()
      .map((f) => ({ f: path.relative(ROOT, f), n: fs.readFileSync(f, 'utf8').split('\n').length }))
      .filter((x) => x.n > FILE_LINES_MAX)
      .map((x) => `${x.f} (${x.n} lines)`);
    expect(big).toEqual([]);
  });

  it('shape: the check finds a long function, and a reason comment excuses it (and what it contains)', () => {
    const body = Array.from({ length: 80 }, (_, i) => `  x += ${i};`).join('\n');
    const long = `function f(): number {\n  let x = 0;\n${body}\n  return x;\n}\n`;
    expect(longFunctions(path.join(ROOT, 'a.ts'), long)).toEqual(['a.ts:1 (84 lines)']);
    expect(longFunctions(path.join(ROOT, 'a.ts'), `// ${REASON}: a table.\n${long}`)).toEqual([]);
    expect(longFunctions(path.join(ROOT, 'a.ts'), `// ${REASON}: a script.\nfunction g(): void {\n  const h = (): number => {\n  let x = 0;\n${body}\n  return x;\n  };\n  h();\n}\n`)).toEqual([]);
  });
});
