/**
 * A training run's folder: `config.json` (what was asked, the task split, the candidate
 * actions), `demos.jsonl` (the demonstrations it learns from), `metrics.jsonl` (one record
 * per iteration) and `checkpoint.msgpack` (weights, optimizer state and the next
 * iteration), replaced atomically by rename so a kill never leaves half a checkpoint.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { ConfigError, TrajectoryError } from '../../src/errors.js';
import type { WeightValues } from '../policy/network.js';
import type { SavedTensor } from './optimizer-state.js';

export interface RunPaths {
  dir: string;
  config: string;
  demos: string;
  metrics: string;
  checkpoint: string;
}

export function runPaths(dir: string): RunPaths {
  return { dir, config: join(dir, 'config.json'), demos: join(dir, 'demos.jsonl'), metrics: join(dir, 'metrics.jsonl'), checkpoint: join(dir, 'checkpoint.msgpack') };
}

/** One iteration's figures. Rates are fractions 0..1; timing fields vary between runs, the rest is fixed by the seed. */
export interface MetricRecord {
  iteration: number;
  /** baseline: the random policy; bc: an epoch of behaviour cloning; pg: a policy-gradient iteration; eval: the greedy policy. */
  phase: 'baseline' | 'bc' | 'pg' | 'eval';
  loss?: number;
  /** bc: share of minibatch states where the demonstrated action scored highest. */
  accuracy?: number;
  /** Training tasks solved (reward ≥ 0.995). */
  successRate?: number;
  meanReward?: number;
  heldOutSuccessRate?: number;
  heldOutMeanReward?: number;
  episodes?: number;
  envSteps?: number;
  envStepsPerSec?: number;
  elapsedSec: number;
}

export const TIMING_FIELDS = ['envStepsPerSec', 'elapsedSec'] as const;

/** Weights, optimizer states and where to continue. */
export interface Checkpoint {
  version: 1;
  nextIteration: number;
  weights: WeightValues[];
  optimizers: Record<string, SavedTensor[]>;
  /** Seconds of training before this checkpoint (so resumed runs report total time). */
  elapsedSec: number;
}

const packr = new Packr({ useRecords: false });

/** Float arrays travel as their little-endian bytes (msgpackr's typed-array extension is not used). */
const toBytes = (data: Float32Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);
const toFloats = (bytes: Uint8Array) => new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
const mapData = <T extends { data: A }, A, B>(items: T[], f: (a: A) => B) => items.map((item) => ({ ...item, data: f(item.data) }));

export function saveCheckpoint(paths: RunPaths, checkpoint: Checkpoint): void {
  const tmp = `${paths.checkpoint}.tmp`;
  const encoded = {
    ...checkpoint,
    weights: mapData(checkpoint.weights, toBytes),
    optimizers: Object.fromEntries(Object.entries(checkpoint.optimizers).map(([k, v]) => [k, mapData(v, toBytes)])),
  };
  writeFileSync(tmp, packr.pack(encoded));
  renameSync(tmp, paths.checkpoint);
}

/** @returns the run's checkpoint, or undefined when it has none yet. @throws TrajectoryError when it is unreadable. */
export function loadCheckpoint(paths: RunPaths): Checkpoint | undefined {
  if (!existsSync(paths.checkpoint)) return undefined;
  let value: Checkpoint;
  try {
    value = packr.unpack(readFileSync(paths.checkpoint)) as Checkpoint;
  } catch (error) {
    throw new TrajectoryError({ file: paths.checkpoint }, 'unreadable checkpoint', error);
  }
  if (value?.version !== 1 || !Array.isArray(value.weights)) throw new TrajectoryError({ file: paths.checkpoint }, 'not a version-1 checkpoint');
  const floats = (data: unknown) => toFloats(data as Uint8Array);
  return {
    ...value,
    weights: mapData(value.weights, floats),
    optimizers: Object.fromEntries(Object.entries(value.optimizers).map(([k, v]) => [k, mapData(v, floats)])),
  };
}

export function writeJson(path: string, value: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** @throws ConfigError naming the flag when the file is missing. */
export function readJson<T>(path: string, flag: string): T {
  if (!existsSync(path)) throw new ConfigError(flag, `names a run without ${path}`);
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/**
 * The metrics of a run, keeping only records before `beforeIteration` (a resumed run redoes
 * what came after its checkpoint) and rewriting the file to match.
 */
export function truncateMetrics(path: string, beforeIteration: number): MetricRecord[] {
  const kept = readMetrics(path).filter((m) => m.iteration < beforeIteration);
  writeFileSync(path, kept.map((m) => `${JSON.stringify(m)}\n`).join(''));
  return kept;
}

/** Every complete metric line of `path` (a line cut off by a kill is ignored). */
export function readMetrics(path: string): MetricRecord[] {
  if (!existsSync(path)) return [];
  const out: MetricRecord[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as MetricRecord);
    } catch {
      break;
    }
  }
  return out;
}
