export { MultiEngineRuntime, type EngineStatus, type MultiEngineOptions } from './multi-engine-runtime.js';
export { EngineSandbox } from './engine-sandbox.js';
export { parseEngineTarget, parseEngineTargets, type EngineTarget } from './endpoints.js';
export { ensureBaseOnEngines, ensureImageOnEngines, transferImage, type EngineClient } from './image-provisioning.js';
export { pickEngine, type EngineLoad } from './placement.js';
export { EngineSet, type ImageProvisioning } from './engine-set.js';
