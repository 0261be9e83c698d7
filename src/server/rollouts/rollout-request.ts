/**
 * What a trainer asks `POST /rollouts` for, checked once at the boundary: K episodes of each
 * listed task, played by a prompting strategy against the trainer's OpenAI-compatible
 * server, streamed back as NDJSON. Every error names the field (WireError VALIDATION_ERROR).
 */

import { STRATEGIES, TOKEN_REQUESTS, type TokenRequest } from '../../agents/index.js';
import { ROLLOUT_FORMATS, type RolloutFormat } from '../../rollouts/index.js';
import { WireError } from '../protocol.js';

/** One line per finished episode (its `group` null: the group is not complete yet), or one per complete group of K. */
export type RolloutStreamUnit = 'episode' | 'group';

export interface RolloutRequest {
  /** Task indices of the served dataset (each played `samplesPerTask` times). */
  tasks: number[];
  samplesPerTask: number;
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
  temperature: number;
  topP: number;
  maxTokens: number;
  /** Sample k of the task at position t of `tasks` gets seed `seed + t·K + k` (as `collect`). */
  seed: number;
  tokens: TokenRequest;
  strategy: string;
  turnLimit: number;
  /** The policy version the trainer is at (null: not given). */
  policyVersion: string | number | null;
  format: RolloutFormat;
  stream: RolloutStreamUnit;
  /** Episodes at once (each holds one of the server's env slots); default: as many as are free, up to the episodes asked for. */
  parallel: number | undefined;
  scaleAdvantages: boolean;
  requestTimeoutMs: number;
  retries: number;
}

/** The defaults of every optional field (those of `collect --policy llm:…`). */
export const ROLLOUT_REQUEST_DEFAULTS = {
  samples_per_task: 1,
  temperature: 1,
  top_p: 1,
  max_tokens: 512,
  seed: 0,
  tokens: 'logprobs',
  strategy: 'tools',
  turn_limit: 10,
  format: 'jsonl',
  stream: 'group',
  scale_advantages: false,
  request_timeout_s: 60,
  retries: 6,
} as const;

/** The most episodes one request may ask for (tasks × samples_per_task). */
export const MAX_EPISODES_PER_REQUEST = 10_000;

const invalid = (field: string, problem: string): never => {
  throw new WireError('VALIDATION_ERROR', `${field} ${problem}`, { field });
};

/**
 * Checks a request body against a dataset of `taskCount` tasks.
 * @throws WireError VALIDATION_ERROR naming the field.
 */
export function parseRolloutRequest(body: unknown, taskCount: number): RolloutRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return invalid('body', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  const known = new Set([...Object.keys(ROLLOUT_REQUEST_DEFAULTS), 'tasks', 'base_url', 'model', 'api_key', 'policy_version', 'parallel']);
  const unknown = Object.keys(b).filter((k) => !known.has(k));
  if (unknown.length > 0) invalid(unknown[0]!, `is not a field of a rollout request (fields: ${[...known].sort().join(', ')})`);
  const d = ROLLOUT_REQUEST_DEFAULTS;
  const int = (field: string, min: number, max = Number.MAX_SAFE_INTEGER, fallback?: number): number => {
    const v = b[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) return invalid(field, `must be an integer ${min}–${max}, got ${JSON.stringify(b[field])}`);
    return v;
  };
  const real = (field: string, min: number, max: number, fallback: number): number => {
    const v = b[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) return invalid(field, `must be a number ${min}–${max}, got ${JSON.stringify(b[field])}`);
    return v;
  };
  const text = (field: string, fallback?: string): string => {
    const v = b[field] ?? fallback;
    if (typeof v !== 'string' || v === '') return invalid(field, `must be a non-empty string, got ${JSON.stringify(b[field])}`);
    return v;
  };
  const choice = <T extends string>(field: string, options: readonly T[], fallback: T): T => {
    const v = b[field] ?? fallback;
    if (typeof v !== 'string' || !(options as readonly string[]).includes(v)) return invalid(field, `must be one of ${options.join(', ')}, got ${JSON.stringify(b[field])}`);
    return v as T;
  };
  if (!Array.isArray(b.tasks) || b.tasks.length === 0) return invalid('tasks', 'must be a non-empty list of task indices');
  const tasks = b.tasks.map((t, i) => {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t >= taskCount) return invalid(`tasks[${i}]`, `must be a task index 0–${taskCount - 1}, got ${JSON.stringify(t)}`);
    return t;
  });
  if (new Set(tasks).size !== tasks.length) invalid('tasks', 'must not repeat a task (ask for more samples_per_task instead)');
  const samplesPerTask = int('samples_per_task', 1, MAX_EPISODES_PER_REQUEST, d.samples_per_task);
  if (tasks.length * samplesPerTask > MAX_EPISODES_PER_REQUEST) invalid('samples_per_task', `× tasks is ${tasks.length * samplesPerTask} episodes; one request may ask for ${MAX_EPISODES_PER_REQUEST}`);
  const baseUrl = text('base_url');
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) invalid('base_url', `must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  const version = b.policy_version;
  if (version !== undefined && version !== null && !(typeof version === 'string' && version !== '') && !(typeof version === 'number' && Number.isFinite(version))) {
    invalid('policy_version', `must be a number or a non-empty string, got ${JSON.stringify(version)}`);
  }
  if (b.api_key !== undefined && typeof b.api_key !== 'string') invalid('api_key', 'must be a string');
  if (b.scale_advantages !== undefined && typeof b.scale_advantages !== 'boolean') invalid('scale_advantages', 'must be true or false');
  return {
    tasks,
    samplesPerTask,
    baseUrl,
    model: text('model'),
    apiKey: b.api_key as string | undefined,
    temperature: real('temperature', 0, 2, d.temperature),
    topP: real('top_p', 0, 1, d.top_p),
    maxTokens: int('max_tokens', 1, 1_000_000, d.max_tokens),
    seed: int('seed', 0, 2 ** 31 - 1, d.seed),
    tokens: choice('tokens', TOKEN_REQUESTS, d.tokens),
    strategy: choice('strategy', Object.keys(STRATEGIES), d.strategy),
    turnLimit: int('turn_limit', 1, 1_000, d.turn_limit),
    policyVersion: (version ?? null) as string | number | null,
    format: choice('format', ROLLOUT_FORMATS, d.format),
    stream: choice<RolloutStreamUnit>('stream', ['episode', 'group'], d.stream),
    parallel: b.parallel === undefined ? undefined : int('parallel', 1, 10_000),
    scaleAdvantages: (b.scale_advantages as boolean | undefined) ?? d.scale_advantages,
    requestTimeoutMs: real('request_timeout_s', 0.001, 3600, d.request_timeout_s) * 1000,
    retries: int('retries', 0, 100, d.retries),
  };
}
