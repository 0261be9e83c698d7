/**
 * A training run's folder: `config.json` (what was asked, the task split, the candidate
 * actions), `demos.jsonl` (the demonstrations it learns from), `metrics.jsonl` (one record
 * per iteration) and `checkpoint.msgpack` (weights, optimizer state and the next
 * iteration), replaced atomically by rename so a kill never leaves half a checkpoint.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { parseJson } from '../../src/datasets/json.js';
import { ConfigError, DatasetError, TrajectoryError } from '../../src/errors.js';
import type { WeightValues } from '../scorer/network.js';
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
  /**
   * baseline: the random policy; retrieval: the first retrieved command, no learning; corpus: an epoch of
   * imitation of the corpus; bc: an epoch of behaviour cloning; pg: a policy-gradient iteration; eval: the greedy policy.
   */
  phase: 'baseline' | 'retrieval' | 'corpus' | 'bc' | 'pg' | 'eval';
  loss?: number;
  /** bc: share of minibatch states where the demonstrated action scored highest. */
  accuracy?: number;
  /** Training tasks solved (isSolved: reward 1, within 1e-6). */
  successRate?: number;
  meanReward?: number;
  heldOutSuccessRate?: number;
  heldOutMeanReward?: number;
  /** Episodes (training and held-out) that ended truncated, never scored: left out of the mean rewards (absent when none). */
  notScored?: number;
  /** `notScored` by reason (`reward-missing`, `sandbox-lost`…). */
  notScoredByReason?: Record<string, number>;
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
  const isBytes = (item: unknown) => (item as { data?: unknown } | null)?.data instanceof Uint8Array;
  if (!value.weights.every(isBytes)) throw new TrajectoryError({ file: paths.checkpoint, field: 'weights' }, 'must be a list of tensors');
  const optimizers: unknown = value.optimizers;
  if (optimizers === null || typeof optimizers !== 'object' || !Object.values(optimizers).every((v) => Array.isArray(v) && v.every(isBytes))) {
    throw new TrajectoryError({ file: paths.checkpoint, field: 'optimizers' }, 'must map each optimizer to a list of tensors');
  }
  if (!Number.isInteger(value.nextIteration)) throw new TrajectoryError({ file: paths.checkpoint, field: 'nextIteration' }, 'must be an integer');
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

/**
 * @throws ConfigError naming the flag when the file is missing; TrajectoryError naming the
 *   file and line when it is not JSON or its top level is not an object.
 */
export function readJson<T>(path: string, flag: string): T {
  if (!existsSync(path)) throw new ConfigError(flag, `names a run without ${path}`);
  let value: unknown;
  try {
    value = parseJson(readFileSync(path, 'utf8'), { file: path });
  } catch (error) {
    if (!(error instanceof DatasetError)) throw error;
    throw new TrajectoryError(error.location, String(error.details.problem), error.cause);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TrajectoryError({ file: path }, 'must be a JSON object');
  return value as T;
}

/**
 * A run's `config.json` (see RunConfig in training/loops/trainer.ts), its shape checked where
 * the code reads it: `settings` with `env` and `shape`, `split.train`/`split.heldOut` and
 * `harvested` as lists of strings.
 * @throws ConfigError when it is missing; TrajectoryError naming the file and field when it is malformed.
 */
export function readRunConfig<T>(path: string, flag: string): T {
  const config = readJson<Record<string, unknown>>(path, flag);
  const bad = (field: string, problem: string): never => {
    throw new TrajectoryError({ file: path, field }, problem);
  };
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const settings = config.settings;
  if (!isObject(settings)) bad('settings', 'must be an object');
  if (typeof (settings as Record<string, unknown>).env !== 'string') bad('settings.env', 'must be a string');
  if (!isObject((settings as Record<string, unknown>).shape)) bad('settings.shape', 'must be an object');
  const split = config.split;
  if (!isObject(split)) bad('split', 'must be an object');
  if (!strings((split as Record<string, unknown>).train)) bad('split.train', 'must be a list of task ids');
  if (!strings((split as Record<string, unknown>).heldOut)) bad('split.heldOut', 'must be a list of task ids');
  if (!strings(config.harvested)) bad('harvested', 'must be a list of actions');
  return config as T;
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

/**
 * Every metric record of `path`; a last line without its newline (cut off by a kill) is
 * ignored.
 * @throws TrajectoryError naming the file and line of any other line that is not JSON, or
 *   not a metric record (an object with a numeric `iteration` and `elapsedSec` and a known `phase`).
 */
export function readMetrics(path: string): MetricRecord[] {
  if (!existsSync(path)) return [];
  const out: MetricRecord[] = [];
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const location = { file: path, line: i + 1 };
    let value: unknown;
    try {
      value = parseJson(line, location);
    } catch (error) {
      if (i === lines.length - 1) break; // the unfinished last line of a killed run
      if (!(error instanceof DatasetError)) throw error;
      throw new TrajectoryError(error.location, String(error.details.problem), error.cause);
    }
    const record = value as Partial<MetricRecord> | null;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      throw new TrajectoryError(location, 'a metric record must be a JSON object');
    }
    if (typeof record.iteration !== 'number') throw new TrajectoryError({ ...location, field: 'iteration' }, 'must be a number');
    if (typeof record.elapsedSec !== 'number') throw new TrajectoryError({ ...location, field: 'elapsedSec' }, 'must be a number');
    if (!['baseline', 'retrieval', 'corpus', 'bc', 'pg', 'eval'].includes(record.phase as string)) {
      throw new TrajectoryError({ ...location, field: 'phase' }, 'must be baseline, retrieval, corpus, bc, pg or eval');
    }
    out.push(record as MetricRecord);
  }
  return out;
}
