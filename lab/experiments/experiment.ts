/**
 * The shape every lab experiment shares: options in, a result with named checks and figures out.
 * An experiment passes only when every check held; the CLI exits 0 only then.
 */
import type { DriverKind } from '../cluster-spec';

export interface ExperimentOptions {
  /** Folder for the lab (lab.json, node data, logs) and the Markdown report. */
  baseDir: string;
  /** Cluster driver (default process). Docker: one container per node, consoles and RPC on published 127.0.0.1 ports. */
  driver?: DriverKind;
  /** Process driver: last octet of node 0's loopback address (node i: 127.0.0.(hostBase+i)). */
  hostBase: number;
  /**
   * Added to the standard ports. Process driver: only used where loopback aliases are unavailable.
   * Docker driver: the published ports are 127.0.0.1:(standard + portOffset + i).
   */
  portOffset: number;
  /** Server script relative to the package root. */
  serverEntry: string;
  /** Keep the lab running afterwards (for a look at the consoles). */
  keep: boolean;
  /** Experiment-specific numeric parameters (e.g. rows, rowBytes, delayMs for intents-apply). */
  params?: Record<string, number>;
  /** Progress lines for a person (stderr in the CLI). */
  progress: (line: string) => void;
}

/** One line of an experiment's chart (report.ts draws it). */
export interface ChartSeries {
  name: string;
  /** [x, y] points, x ascending (e.g. ms since start, bytes). */
  points: Array<[number, number]>;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface ExperimentResult {
  name: string;
  title: string;
  /** One paragraph: what was done. */
  summary: string;
  checks: Check[];
  /** Measured figures, name → value with unit in the name (e.g. recoveryMs). */
  figures: Record<string, number | string>;
  /** Optional chart of memtable bytes over time per node. */
  chart?: { title: string; series: ChartSeries[]; yLabel: string };
  /** Timeline lines (ms since start: event). */
  timeline: string[];
  /** Path of the written Markdown report (set by the runner). */
  reportPath?: string;
}

export type ExperimentFn = (o: ExperimentOptions) => Promise<ExperimentResult>;

export interface ExperimentDef {
  name: string;
  description: string;
  run: ExperimentFn;
}

export function passed(r: ExperimentResult): boolean {
  return r.checks.length > 0 && r.checks.every((c) => c.ok);
}
