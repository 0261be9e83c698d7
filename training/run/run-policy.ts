import { ConfigError } from '../../src/errors.js';
import { loadDemos } from '../demos/demo-episode.js';
import { corpusPairs } from '../loops/corpus-stage.js';
import { runCandidates, type RunConfig } from '../loops/trainer.js';
import type { Exploration } from '../../src/env/training-facts.js';
import { ScorerNetwork } from '../scorer/network.js';
import { NeuralPolicy } from '../scorer/neural-policy.js';
import { mulberry32 } from '../rng.js';
import { loadCheckpoint, readRunConfig, runPaths } from './run-files.js';

/**
 * The greedy policy of a run's latest checkpoint (initialise the tfjs backend first: selectBackend),
 * exploring as `explorationOf` says the run's env does.
 * @throws ConfigError when the folder holds no run or no checkpoint.
 */
export function loadRunPolicy(dir: string, flag: string, explorationOf: (env: string) => Exploration): NeuralPolicy {
  const paths = runPaths(dir);
  const config = readRunConfig<RunConfig>(paths.config, flag);
  const checkpoint = loadCheckpoint(paths);
  if (!checkpoint) throw new ConfigError(flag, `names a run without a checkpoint (${paths.checkpoint})`);
  const network = new ScorerNetwork(config.settings.shape, mulberry32(0));
  network.importWeights(checkpoint.weights);
  const { candidates } = runCandidates(config, corpusPairs(config.settings.corpus, config.nearDuplicates?.corpus ?? []), loadDemos(paths.demos), explorationOf(config.settings.env));
  return new NeuralPolicy(network, candidates, { kind: 'greedy' }, `checkpoint:${dir}`);
}
