/**
 * What goes into the offline lab image: the built project (dist/ without tests, package.json, the
 * .proto schemas the servers load at run time), the
 * production node_modules (resolved from package.json's dependencies the way Node resolves them) and,
 * for a FROM-scratch image, the Node runtime itself: the node binary, every shared library `ldd` lists
 * for it and for the native addons among those modules, and the dynamic loader.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common';

export interface ImageFile {
  /** Absolute path inside the image. */
  imagePath: string;
  /** Absolute path on this machine (symlinks already resolved). */
  source: string;
  size: number;
  mode: number;
}

/** Bounds: a dependency graph or a folder tree larger than this is a bug, not a project. */
const PACKAGES_MAX = 5_000;
const FILES_MAX = 200_000;

export const IMAGE_APP_DIR = '/app';
export const IMAGE_NODE_PATH = '/usr/bin/node';

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function depNames(pkg: Record<string, unknown>, field: string): string[] {
  const d = pkg[field];
  return typeof d === 'object' && d !== null ? Object.keys(d) : [];
}

/** Node's lookup: from the requiring package's folder up to the root, try DIR/node_modules/NAME. */
function resolvePackage(name: string, fromDir: string, root: string): string | undefined {
  let dir = fromDir;
  for (;;) {
    const cand = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(cand, 'package.json'))) return cand;
    if (dir === root || !dir.startsWith(root)) return undefined;
    dir = path.dirname(dir);
    // Skip the `node_modules` level itself (a package's parent folder) and scope folders.
    while (path.basename(dir) === 'node_modules' || path.basename(dir).startsWith('@')) dir = path.dirname(dir);
  }
}

/** Folders of every package reachable from the root's dependencies (not devDependencies). */
export function productionPackageDirs(root: string): string[] {
  const seen = new Set<string>();
  const queue: Array<{ name: string; from: string; optional: boolean }> = [];
  const rootPkg = readJson(path.join(root, 'package.json'));
  for (const n of depNames(rootPkg, 'dependencies')) queue.push({ name: n, from: root, optional: false });
  for (const n of depNames(rootPkg, 'optionalDependencies')) queue.push({ name: n, from: root, optional: true });
  while (queue.length) {
    const { name, from, optional } = queue.shift()!;
    const dir = resolvePackage(name, from, root);
    if (!dir) {
      if (optional) continue;
      throw new DbError(ErrorCode.NOT_FOUND, `production dependency ${name} (needed by ${path.relative(root, from) || 'tessera'}) is not installed; run npm ci`);
    }
    if (seen.has(dir)) continue;
    seen.add(dir);
    if (seen.size > PACKAGES_MAX) throw new DbError(ErrorCode.INTERNAL, `more than ${PACKAGES_MAX} production packages`);
    const pkg = readJson(path.join(dir, 'package.json'));
    for (const n of depNames(pkg, 'dependencies')) queue.push({ name: n, from: dir, optional: false });
    for (const n of depNames(pkg, 'optionalDependencies')) queue.push({ name: n, from: dir, optional: true });
  }
  return [...seen].sort();
}

interface WalkOptions {
  /** Relative paths (from the walk root, '/'-separated) to leave out, with everything below. */
  skip: (rel: string, isDir: boolean) => boolean;
}

function walkFiles(dir: string, imageDir: string, opts: WalkOptions, out: ImageFile[], rel = ''): void {
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    const abs = path.join(dir, r);
    let st: fs.Stats;
    try {
      st = fs.statSync(abs); // follows symlinks: the image gets real files
    } catch {
      continue; // dangling link
    }
    if (opts.skip(r, st.isDirectory())) continue;
    if (st.isDirectory()) walkFiles(dir, imageDir, opts, out, r);
    else if (st.isFile()) {
      out.push({ imagePath: `${imageDir}/${r}`, source: fs.realpathSync(abs), size: st.size, mode: st.mode & 0o777 });
      if (out.length > FILES_MAX) throw new DbError(ErrorCode.INTERNAL, `more than ${FILES_MAX} files for the image`);
    }
  }
}

/** dist/ (no tests, no build info), package.json and production node_modules, placed under /app. */
export function collectAppFiles(root: string): ImageFile[] {
  const out: ImageFile[] = [];
  const pj = path.join(root, 'package.json');
  out.push({ imagePath: `${IMAGE_APP_DIR}/package.json`, source: pj, size: fs.statSync(pj).size, mode: 0o644 });
  const dist = path.join(root, 'dist');
  if (!fs.existsSync(path.join(dist, 'lab'))) throw new DbError(ErrorCode.NOT_FOUND, `${dist} has no build; run npx tsc -b first`);
  walkFiles(dist, `${IMAGE_APP_DIR}/dist`, { skip: (r) => r === 'test' || r.endsWith('.tsbuildinfo') }, out);
  // The servers load their protobuf schemas at run time from PACKAGE_ROOT/rpc/protos (rpc/proto.ts).
  const protos = path.join(root, 'rpc', 'protos');
  if (!fs.existsSync(protos)) throw new DbError(ErrorCode.NOT_FOUND, `${protos} is missing (the servers load their schemas from there)`);
  walkFiles(protos, `${IMAGE_APP_DIR}/rpc/protos`, { skip: (r, isDir) => !isDir && !r.endsWith('.proto') }, out);
  const platform = `${process.platform}-${process.arch}`;
  // Prebuilds ship glibc and musl variants side by side; keep the one this runtime loads.
  const otherLibc = isGlibcRuntime() ? /\.musl\.node$/ : /\.glibc\.node$/;
  for (const pkgDir of productionPackageDirs(root)) {
    const rel = path.relative(root, pkgDir).split(path.sep).join('/');
    walkFiles(
      pkgDir,
      `${IMAGE_APP_DIR}/${rel}`,
      {
        // Nested node_modules hold separate packages: they come in only if the resolution above reached them.
        // Prebuilt addons for other platforms are dead weight in a Linux image.
        skip: (r, isDir) =>
          (isDir && (r === 'node_modules' || r.endsWith('/node_modules'))) ||
          (!isDir && otherLibc.test(r)) ||
          (isDir && /(^|\/)prebuilds\/[^/]+$/.test(r) && !r.slice(r.lastIndexOf('/') + 1).startsWith(platform)),
      },
      out,
    );
  }
  return out;
}

function isGlibcRuntime(): boolean {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return typeof header?.glibcVersionRuntime === 'string';
}

/** Shared objects `ldd FILE` names (absolute paths), including the loader. */
export function lddLibraries(file: string): string[] {
  let text: string;
  try {
    text = execFileSync('ldd', [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const out = String((e as { stdout?: unknown }).stdout ?? '');
    // "not a dynamic executable" / "statically linked": nothing to add.
    if (/not a dynamic|statically linked/.test(out + String((e as { stderr?: unknown }).stderr ?? ''))) return [];
    throw new DbError(ErrorCode.INTERNAL, `ldd ${file} failed: ${(e as Error).message}`);
  }
  const libs: string[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    if (t.includes('=> not found')) throw new DbError(ErrorCode.NOT_FOUND, `ldd ${file}: ${t}`);
    const arrow = /=>\s+(\/\S+)/.exec(t);
    if (arrow) libs.push(arrow[1]!);
    else if (t.startsWith('/')) libs.push(t.split(/\s+/)[0]!); // the loader line
  }
  return libs;
}

/** The node binary, its libraries and those of the native addons among `appFiles`, plus tiny /etc files. */
export function collectRuntimeFiles(appFiles: readonly ImageFile[], nodeBinary = process.execPath): ImageFile[] {
  const out: ImageFile[] = [];
  const real = fs.realpathSync(nodeBinary);
  out.push({ imagePath: IMAGE_NODE_PATH, source: real, size: fs.statSync(real).size, mode: 0o755 });
  const libs = new Set<string>(lddLibraries(real));
  for (const f of appFiles) if (f.source.endsWith('.node')) for (const l of lddLibraries(f.source)) libs.add(l);
  for (const l of [...libs].sort()) {
    // Keep the path ldd printed (the loader and libc are found there); copy the bytes of the link's target.
    const src = fs.realpathSync(l);
    out.push({ imagePath: l, source: src, size: fs.statSync(src).size, mode: 0o755 });
  }
  return out;
}

/** Directories of the libraries, for LD_LIBRARY_PATH in the image. */
export function libraryDirs(files: readonly ImageFile[]): string[] {
  return [...new Set(files.filter((f) => /\.so(\.|$)/.test(f.imagePath)).map((f) => path.posix.dirname(f.imagePath)))].sort();
}
