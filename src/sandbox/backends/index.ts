export { MultiEngineRuntime } from './multi-engine-runtime.js';
export { EngineSandbox } from './engine-sandbox.js';
export { parseEngineTarget, parseEngineTargets } from './endpoints.js';
export { ensureBaseOnEngines, ensureImageOnEngines, transferImage, type EngineClient } from './image-provisioning.js';
export { pickEngine, type EngineLoad } from './placement.js';
export { EngineSet, type EngineSetOptions, type ImageProvisioning } from './engine-set.js';
export type { BackendOptions, CleanupReport, CleanupRequest, EngineStatus, EngineTarget, MultiEngineOptions, OpenedBackend, SandboxBackend } from './backend.js';
export { backendOf, SANDBOX_BACKENDS } from './backends.js';
