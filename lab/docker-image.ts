/**
 * The lab's Docker image, built without any registry (docs/architecture.md §Lab): the inputs (image-inputs.ts) are
 * staged in a build folder (hard links where possible), sent as an uncompressed tar context and built
 * `FROM scratch`, or — with baseImage, for machines that can pull — from an official Node image with
 * only the app copied in. The tag is a hash of the inputs (tessera-lab:<12 hex>), so an unchanged
 * build is reused and a changed dist/ gives a new image.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { DbError, ErrorCode } from '../common';
import { collectAppFiles, collectRuntimeFiles, IMAGE_APP_DIR, IMAGE_NODE_PATH, type ImageFile, libraryDirs } from './image-inputs';
import { packageRoot } from './package-root';
import { type TarEntry, tarSize, tarStream } from './tar-writer';
import { makeDirs } from '../common/fs-dirs';

export const LAB_IMAGE_REPO = 'tessera-lab';
/** Log a transfer line at most this often (bytes). */
const PROGRESS_STEP_BYTES = 32 * 1024 * 1024;
/** Build output lines kept for an error report. */
const BUILD_LOG_LINES_MAX = 50;

export interface LabImageOptions {
  docker: Docker;
  /** e.g. 'node:20-bookworm-slim'; undefined = FROM scratch with this machine's Node runtime. */
  baseImage?: string;
  /** Progress lines for people (steps, bytes). */
  onProgress?: (line: string) => void;
  /** Rebuild even when the tag exists. */
  force?: boolean;
  /** Remove older tessera-lab:* images that no container uses (the vfs driver makes each one costly). */
  pruneOld?: boolean;
}

export interface LabImage {
  tag: string;
  built: boolean;
  files: number;
  bytes: number;
  /** How a container runs node: the image's entrypoint is the node binary. */
  nodePath: string;
  appDir: string;
}

export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function dockerfile(baseImage: string | undefined, runtime: readonly ImageFile[]): string {
  if (baseImage) {
    return [`FROM ${baseImage}`, `COPY rootfs${IMAGE_APP_DIR} ${IMAGE_APP_DIR}`, `WORKDIR ${IMAGE_APP_DIR}`, 'ENTRYPOINT ["node"]', ''].join('\n');
  }
  return [
    'FROM scratch',
    'COPY rootfs/ /',
    'ENV PATH=/usr/local/bin:/usr/bin:/bin',
    `ENV LD_LIBRARY_PATH=${libraryDirs(runtime).join(':')}`,
    `WORKDIR ${IMAGE_APP_DIR}`,
    `ENTRYPOINT ["${IMAGE_NODE_PATH}"]`,
    '',
  ].join('\n');
}

/** Small files a scratch image needs so that name lookups and temp files work. */
function etcFiles(dir: string): ImageFile[] {
  makeDirs(dir);
  const files: Array<[string, string]> = [
    ['/etc/nsswitch.conf', 'hosts: files dns\n'],
    ['/etc/passwd', 'root:x:0:0:root:/root:/usr/bin/node\n'],
    ['/etc/group', 'root:x:0:\n'],
  ];
  return files.map(([p, text]) => {
    const src = path.join(dir, path.basename(p));
    fs.writeFileSync(src, text);
    return { imagePath: p, source: src, size: Buffer.byteLength(text), mode: 0o644 };
  });
}

/** The Dockerfile's metadata lines (everything after FROM/COPY) as `docker import --change` values. */
function importChanges(dockerfileText: string): string[] {
  return [...dockerfileText.split('\n').filter((l) => /^(ENV|WORKDIR|ENTRYPOINT|CMD|LABEL) /.test(l)), 'LABEL tessera.lab=image'];
}

function hashInputs(files: readonly ImageFile[], dockerfileText: string): string {
  const h = crypto.createHash('sha256');
  h.update(dockerfileText);
  for (const f of [...files].sort((a, b) => a.imagePath.localeCompare(b.imagePath))) {
    h.update(`${f.imagePath}\0${f.size}\0${f.mode}\0`);
    h.update(fs.readFileSync(f.source));
  }
  return h.digest('hex').slice(0, 12);
}

async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

/**
 * Puts every file into the build folder and returns the staged list (sources and sizes re-read from
 * the staged copies). dist/, package.json and rpc/protos/ are copied: a compiler rewriting them in place while we
 * build must not change what we hash or send. The large, stable rest is hard-linked when possible.
 */
function stage(buildDir: string, files: readonly ImageFile[], root: string): ImageFile[] {
  const real = fs.realpathSync(root);
  const mutable = [path.join(real, 'dist') + path.sep, path.join(real, 'package.json'), path.join(real, 'rpc', 'protos') + path.sep];
  return files.map((f) => {
    const dst = path.join(buildDir, 'rootfs', f.imagePath);
    makeDirs(path.dirname(dst));
    const copy = mutable.some((m) => f.source === m || f.source.startsWith(m));
    if (copy) fs.copyFileSync(f.source, dst);
    else {
      try {
        fs.linkSync(f.source, dst);
      } catch {
        fs.copyFileSync(f.source, dst);
      }
    }
    return { ...f, source: dst, size: fs.statSync(dst).size };
  });
}

/**
 * Archive entries for the staged files under `prefix` ('rootfs/' for a build context, '' for an
 * import; files already staged), with every parent directory so the archive creates them with sane modes, and /tmp.
 */
function tarEntries(files: readonly ImageFile[], prefix: string): TarEntry[] {
  const top = prefix.replace(/\/$/, '');
  const dirs = new Set<string>([`${prefix}tmp`]);
  if (top) dirs.add(top);
  for (const f of files) {
    let d = path.posix.dirname(`${prefix}${f.imagePath.slice(1)}`);
    while (d !== '.' && !dirs.has(d)) {
      dirs.add(d);
      d = path.posix.dirname(d);
    }
  }
  const entries: TarEntry[] = [];
  for (const d of [...dirs].sort()) entries.push({ name: d, type: 'dir', mode: d === `${prefix}tmp` ? 0o1777 : 0o755 });
  for (const f of files) entries.push({ name: `${prefix}${f.imagePath.slice(1)}`, type: 'file', mode: f.mode, source: f.source, size: f.size });
  return entries;
}

/** Lines of the engine's JSON progress stream, to `say`; rejects on an error event. */
function followEngine(docker: Docker, stream: NodeJS.ReadableStream, what: string, say: (l: string) => void): Promise<string[]> {
  const log: string[] = [];
  return new Promise<string[]>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : resolve(log)),
      (ev: unknown) => {
        const o = (typeof ev === 'object' && ev !== null ? ev : {}) as Record<string, unknown>;
        if (typeof o['error'] === 'string') {
          reject(new DbError(ErrorCode.INTERNAL, `${what} failed: ${o['error']}\n${log.join('\n')}`));
          return;
        }
        const line = typeof o['stream'] === 'string' ? o['stream'].trimEnd() : typeof o['status'] === 'string' ? o['status'] : '';
        if (line) {
          log.push(line);
          if (log.length > BUILD_LOG_LINES_MAX) log.shift();
          say(`image 4/4: ${line}`);
        }
      },
    );
  });
}

export async function ensureLabImage(opts: LabImageOptions): Promise<LabImage> {
  const say = opts.onProgress ?? ((l: string) => process.stderr.write(`${l}\n`));
  const root = packageRoot();
  const base = opts.baseImage;
  say(`image 1/4: collecting inputs (dist/, production node_modules${base ? '' : ', Node runtime and shared libraries'})`);
  const app = collectAppFiles(root);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-image-'));
  try {
    const runtime = base ? [] : [...collectRuntimeFiles(app), ...etcFiles(path.join(work, 'etc'))];
    const text = dockerfile(base, runtime);
    const buildDir = path.join(work, 'build');
    makeDirs(buildDir);
    const files = stage(buildDir, [...app, ...runtime], root);
    const bytes = files.reduce((s, f) => s + f.size, 0);
    say(`image 2/4: ${files.length} files, ${mib(bytes)} (${runtime.length} runtime files) staged in ${buildDir}; hashing`);
    const tag = `${LAB_IMAGE_REPO}:${hashInputs(files, text)}`;
    const result: LabImage = { tag, built: false, files: files.length, bytes, nodePath: base ? 'node' : IMAGE_NODE_PATH, appDir: IMAGE_APP_DIR };
    if (!opts.force && (await imageExists(opts.docker, tag))) {
      say(`image: ${tag} exists, reused`);
      return result;
    }
    // A scratch image is imported as one layer: no intermediate containers, which the vfs storage
    // driver would each fill with a full copy. A base image needs a real build.
    const entries = tarEntries(files, base ? 'rootfs/' : '');
    if (base) {
      const dockerfilePath = path.join(buildDir, 'Dockerfile');
      fs.writeFileSync(dockerfilePath, text);
      entries.unshift({ name: 'Dockerfile', type: 'file', mode: 0o644, source: dockerfilePath, size: Buffer.byteLength(text) });
    }
    const total = tarSize(entries);
    say(`image 3/4: sending ${mib(total)} to the Docker engine`);
    let nextReport = PROGRESS_STEP_BYTES;
    const context = tarStream(entries, (sent) => {
      if (sent >= nextReport || sent === total) {
        say(`image 3/4: sent ${mib(sent)} / ${mib(total)} (${Math.floor((100 * sent) / total)}%)`);
        nextReport = sent + PROGRESS_STEP_BYTES;
      }
    });
    const [repo, version] = tag.split(':') as [string, string];
    const stream = base
      ? await opts.docker.buildImage(context, { t: tag, rm: true, forcerm: true, labels: { 'tessera.lab': 'image' } })
      : await opts.docker.importImage(context, { repo, tag: version, changes: importChanges(text) });
    const log = await followEngine(opts.docker, stream, `building ${tag}`, say);
    if (!(await imageExists(opts.docker, tag))) throw new DbError(ErrorCode.INTERNAL, `docker build reported success but ${tag} does not exist:\n${log.join('\n')}`);
    result.built = true;
    say(`image: built ${tag} (${mib(bytes)})`);
    if (opts.pruneOld ?? true) await pruneOldImages(opts.docker, tag, say);
    return result;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Removes other tessera-lab tags; the engine refuses (and we ignore) those a container still uses. */
export async function pruneOldImages(docker: Docker, keep: string, say: (l: string) => void): Promise<void> {
  const images = await docker.listImages({ filters: JSON.stringify({ reference: [LAB_IMAGE_REPO] }) });
  for (const img of images) {
    for (const t of img.RepoTags ?? []) {
      if (t === keep || !t.startsWith(`${LAB_IMAGE_REPO}:`)) continue;
      try {
        await docker.getImage(t).remove();
        say(`image: removed old ${t}`);
      } catch {
        // in use by a container: keep it
      }
    }
  }
}
