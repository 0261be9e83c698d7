/**
 * intercode-ts: interactive coding tasks as RL environments. Importing the package
 * registers the built-in environments, so `make('intercode/bash-v1')` works; it touches
 * no Docker engine until an env is created.
 */
export * from './errors.js';
export { make, registerEnv, registeredEnvIds, envSpec, type EnvSpec } from './env/registry.js';
export type { Env, ResetOptions, ResetResult, Score, StepInfo, StepResult, TaskEnv } from './env/types.js';
export { SandboxEnv, type EpisodeState, type SandboxEnvConfig } from './env/sandbox-env.js';
export * from './sandbox/types.js';
export { connectEngine, defaultEndpoint } from './sandbox/docker/engine.js';
export { DockerRuntime } from './sandbox/docker/docker-sandbox.js';
export { cleanup } from './sandbox/docker/cleanup.js';
export * from './sandbox/lifecycle/index.js';
export * from './sandbox/multi/index.js';
export * from './sandbox/kubernetes/index.js';
export { ShellSession, type ShellSessionOptions } from './sandbox/shell/shell-session.js';
export { IntercodeExecRunner } from './sandbox/shell/intercode-exec-runner.js';
export { renderObservation, type CommandEvent, type CommandResult, type CommandRunner } from './sandbox/shell/types.js';
export { ensureBaseImage, ensureImage, BASE_IMAGE } from './images/image-builder.js';
export type { ImageRecipe } from './images/recipe.js';
export * from './datasets/index.js';
export * from './trajectory/index.js';
export * from './scoring/index.js';
export { replayTrajectories, detectProtocol, type ReplayReport, type RecordingProtocol } from './replay/replay.js';
export * from '../envs/bash/index.js';
export * from '../envs/sql/index.js';
export { SharedServerBackend, PrivateServerBackend } from '../envs/sql/mariadb/backends.js';
export * from '../envs/ctf/index.js';
export * from '../envs/task/index.js';
export * from '../envs/python/index.js';
export * from './policy/index.js';
export * from './pool/index.js';
export * from './vec/index.js';
export * from './engine/index.js';
export * from './golds/index.js';
export * from './agents/index.js';
export * from './eval/index.js';
export * from './mock-llm/index.js';
export { isCheckpointable, type CheckpointableEnv } from './env/types.js';
export { CheckpointStore, DEFAULT_LAYER_LIMITS, type CheckpointInfo, type EpisodeCheckpoint } from './env/checkpoint.js';
