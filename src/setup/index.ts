export { probeHost, pingEngine, readOsRelease, commandExists, PROBED_COMMANDS, type HostFacts, type EngineAnswer, type ProbeOptions } from './host-facts.js';
export { planSetup, type PlanOptions, type SetupPlan, type Situation } from './plan.js';
export { runSetup, type SetupResult, type StepRecord } from './run-setup.js';
export { SYSTEM_DOCKERD, type DockerdLayout, type SetupStep, type StepContext, type StepOutcome } from './step.js';
export { ENGINE_PACKAGES, TEST_TOOL_PACKAGES, aptPackagesStep, missingPackages } from './steps/apt-packages.js';
export { mergeRuntime, RUNSC_ARGS, runscRuntimeStep, type RuntimeEntry } from './steps/runsc-runtime.js';
export { DOCKERD_FLAGS, dockerdArgs, dockerdCommand, startDockerdStep, sudoDockerdCommand } from './steps/start-dockerd.js';
export { buildImagesStep, type ImageBuilder } from './steps/build-images.js';
export { btrfsDataRootStep, btrfsEngineLayout, DEFAULT_BTRFS_ENGINE_DIR, removeBtrfsEngine } from './btrfs-engine.js';
