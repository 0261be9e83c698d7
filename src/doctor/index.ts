export { runDoctor, type DoctorReport } from './doctor.js';
export { cgroupCheck, diskQuotaCheck, engineCheck, freeDiskCheck, imagesCheck, mountOf, runtimesCheck, type CheckedImage, type CheckResult, type EngineInfo } from './checks.js';
export { clusterCheck, clusterPidsCheck } from '../sandbox/kubernetes/cluster-checks.js';
