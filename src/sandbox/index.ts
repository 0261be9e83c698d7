/**
 * `intercode-ts/sandbox`: sandboxes and where they run — the sandbox contract, the backends
 * (Docker engines, a Kubernetes cluster) and their runtimes, the engine set commands share,
 * the persistent shells, the lifecycle (crash reaping, shutdown), cleanup and images.
 */
export * from './types.js';
export type { HealthCheck } from './health.js';
export { connectEngine, defaultEndpoint } from './docker/engine.js';
export { DockerRuntime, type DockerRuntimeOptions, type Transport } from './docker/docker-runtime.js';
export { DockerSandbox } from './docker/docker-sandbox.js';
export { MASKED_PATHS } from './docker/container-creation.js';
export { cleanup } from './docker/cleanup.js';
export * from './lifecycle/index.js';
export * from './backends/index.js';
export * from './kubernetes/index.js';
export { ShellSession, type ShellSessionOptions } from './shell/shell-session.js';
export { IntercodeExecRunner } from './shell/intercode-exec-runner.js';
export { renderObservation, type CommandEvent, type CommandResult, type CommandRunner } from './shell/types.js';
export { ensureBaseImage, ensureImage, BASE_IMAGE } from '../images/image-builder.js';
export type { ImageRecipe } from '../images/recipe.js';
