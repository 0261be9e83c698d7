export { runDoctor, type DoctorReport } from './doctor.js';
export { cgroupCheck, clusterCheck, clusterPidsCheck, diskQuotaCheck, engineCheck, freeDiskCheck, imagesCheck, mountOf, runtimesCheck, type CheckResult, type EngineInfo } from './checks.js';
