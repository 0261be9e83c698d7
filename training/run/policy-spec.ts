/**
 * `--policy` values: `gold` (the env's gold actions), `replay:FILE` (demonstrations from a
 * JSONL file or replay-buffer folder), `checkpoint:RUN` (a trained run's greedy policy).
 * `llm:MODEL` (a prompting strategy against an OpenAI-compatible server) is played by
 * `collect` itself (src/cli/collect-llm.ts), through InterCode's episode protocol, not here.
 */
import type { Task } from '../../src/datasets/index.js';
import { ConfigError } from '../../src/errors.js';
import { GoldPolicy, type Policy } from '../../src/policy/index.js';
import { loadDemos } from '../demos/demo-episode.js';
import { loadRunPolicy } from './run-policy.js';
import { selectBackend } from '../scorer/backend.js';
import type { Exploration } from '../../src/env/training-facts.js';
import { ReplayPolicy } from '../demos/replay-policy.js';

export interface ResolvedPolicy {
  policy: Policy;
  /** The tasks this policy can play (a replay covers only recorded tasks). */
  covers: (task: Task) => boolean;
}

export const POLICY_FORMS = 'gold, replay:FILE, checkpoint:RUN';

/**
 * @param explorationOf a checkpoint's env's exploratory actions, by the env's name.
 * @throws ConfigError for an unknown or unavailable form; TrajectoryError for a bad replay file.
 */
export async function resolvePolicy(spec: string, goldActions: (task: Task) => string[], explorationOf: (env: string) => Exploration, log: (line: string) => void): Promise<ResolvedPolicy> {
  const colon = spec.indexOf(':');
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  const argument = colon < 0 ? '' : spec.slice(colon + 1);
  switch (kind) {
    case 'gold':
      return { policy: new GoldPolicy((context) => goldActions(context.task)), covers: () => true };
    case 'replay': {
      if (!argument) throw new ConfigError('--policy', 'replay: needs a file, e.g. replay:demos.jsonl');
      const policy = new ReplayPolicy(argument, loadDemos(argument));
      return { policy, covers: (task) => policy.covers(task.id) };
    }
    case 'checkpoint': {
      if (!argument) throw new ConfigError('--policy', 'checkpoint: needs a run folder, e.g. checkpoint:checkpoints/bash-1');
      await selectBackend(log);
      return { policy: loadRunPolicy(argument, '--policy', explorationOf), covers: () => true };
    }
    case 'llm':
      throw new ConfigError('--policy', `"${spec}": llm:MODEL policies are played by \`intercode collect\` (and \`intercode eval\`), not here; use ${POLICY_FORMS}`);
    default:
      throw new ConfigError('--policy', `must be one of ${POLICY_FORMS} (or llm:MODEL with collect), got "${spec}"`);
  }
}
