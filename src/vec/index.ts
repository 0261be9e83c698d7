export { VecEnv, VecStepError, type AutoresetMode, type EnvStep, type VecEnvOptions, type VecStepInfo } from './vec-env.js';
export { cleaningRestorer, pooledVecEnv, vecEnvFor, type CleanMode, type PooledVecEnvOptions } from './make-vec-env.js';
export { VecEpisodeDriver, VecSlotEnv } from './episode-driver.js';
