/**
 * What the package's root entry exports of the envs: each env's factories and options.
 * Importing it registers every env of envs/index.ts, so `make('intercode/<name>-v1')` works.
 * The rest of an env is the harness's own: a user makes envs by id or with these factories.
 */
import './index.js';
export { createBashEnv, createBashEnvs, type BashEnvOptions } from './bash/index.js';
export { createSqlEnv, createSqlEnvs, type SqlEnvOptions } from './sql/index.js';
export { createCtfEnv, createCtfEnvs, type CtfEnvOptions } from './ctf/index.js';
export { createPythonEnv, createPythonEnvs, type PythonEnvOptions } from './python/index.js';
export { createTaskEnv, createTaskEnvs, type TaskEnvOptions } from './task/index.js';
