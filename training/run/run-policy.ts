import { ConfigError } from '../../src/errors.js';
import type { RunConfig } from '../loops/trainer.js';
import { CandidateSet } from '../policy/candidates.js';
import { ScorerNetwork } from '../policy/network.js';
import { NeuralPolicy } from '../policy/neural-policy.js';
import { mulberry32 } from '../rng.js';
import { loadCheckpoint, readRunConfig, runPaths } from './run-files.js';

/**
 * The greedy policy of a run's latest checkpoint (initialise the tfjs backend first: selectBackend).
 * @throws ConfigError when the folder holds no run or no checkpoint.
 */
export function loadRunPolicy(dir: string, flag: string): NeuralPolicy {
  const paths = runPaths(dir);
  const config = readRunConfig<RunConfig>(paths.config, flag);
  const checkpoint = loadCheckpoint(paths);
  if (!checkpoint) throw new ConfigError(flag, `names a run without a checkpoint (${paths.checkpoint})`);
  const network = new ScorerNetwork(config.settings.shape, mulberry32(0));
  network.importWeights(checkpoint.weights);
  return new NeuralPolicy(network, new CandidateSet(config.settings.env, config.harvested), { kind: 'greedy' }, `checkpoint:${dir}`);
}
