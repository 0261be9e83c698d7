export { VecEnv, VecStepError, type AutoresetMode, type EnvStep, type VecEnvOptions, type VecStepInfo } from './vec-env.js';
export { cleaningRestorer, defaultCleanMode, pooledVecEnv, SESSION_SPARES, poolableSandboxEnvs, sharedPool, spareWorkspaces, vecEnvFor, type CleanMode, type PooledVecEnvOptions, type PoolWorkload, type SharedPool, type SharedPoolOptions } from './make-vec-env.js';
export { VecEpisodeDriver, VecSlotEnv } from './episode-driver.js';
