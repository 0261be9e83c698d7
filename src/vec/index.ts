export { VecEnv, type AutoresetMode, type EnvStep, type VecEnvOptions, type VecStepInfo } from './vec-env.js';
export { pooledVecEnv } from './make-vec-env.js';
