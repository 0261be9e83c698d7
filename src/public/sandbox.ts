/**
 * `intercode-ts/sandbox`: running sandboxes without an env, and writing a backend of one's
 * own: the sandbox contract, the Docker and Kubernetes runtimes, engine targets, images,
 * the shell an agent's actions run in, and cleaning up after a run.
 */
export type { Sandbox, SandboxRuntime, SandboxSpec, ExecOptions, ExecResult, FileSystemChange, SandboxFromHost, ShellHandOver, WrittenLayer } from '../sandbox/types.js';
export { DEFAULT_LIMITS } from '../sandbox/types.js';
export { DockerRuntime, type DockerRuntimeOptions } from '../sandbox/docker/docker-runtime.js';
export { KubernetesRuntime, type KubernetesRuntimeOptions } from '../sandbox/kubernetes/index.js';
export { backendOf, SANDBOX_BACKENDS, parseEngineTarget, type SandboxBackend, type EngineTarget } from '../sandbox/backends/index.js';
export { ensureImage } from '../images/image-builder.js';
export type { ImageRecipe } from '../images/recipe.js';
export { ShellSession, type ShellSessionOptions } from '../sandbox/shell/shell-session.js';
export type { CommandResult, CommandRunner } from '../sandbox/shell/types.js';
export { cleanup } from '../sandbox/docker/cleanup.js';
export { installShutdownHandlers } from '../sandbox/lifecycle/index.js';
