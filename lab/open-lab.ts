/** The driver of an existing lab (from BASE/lab.json) or a new one of a given kind. */
import * as os from 'node:os';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common';
import type { DriverKind } from './cluster-spec';
import type { ClusterDriver } from './cluster-driver';
import { DockerDriver, type DockerDriverOptions } from './docker-driver';
import { readLabState } from './lab-state';
import { ProcessDriver } from './process-driver';

/** Where `tessera lab` keeps a lab when --base_dir is not given. */
export function defaultLabBaseDir(): string {
  return path.join(os.homedir(), '.tessera', 'lab');
}

export function newDriver(kind: DriverKind, opts: DockerDriverOptions = {}): ClusterDriver {
  return kind === 'docker' ? new DockerDriver(undefined, opts) : new ProcessDriver();
}

export function openLab(baseDir: string, opts: DockerDriverOptions = {}): ClusterDriver {
  const st = readLabState(baseDir);
  if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no lab in ${path.resolve(baseDir)} (no lab.json); start one with tessera lab up --base_dir ${baseDir}`);
  return st.spec.driver === 'docker' ? new DockerDriver(st, opts) : new ProcessDriver(st);
}
