import Docker from 'dockerode';
import { probeHost, type ProbeOptions } from '../setup/host-facts.js';
import { cgroupCheck, diskQuotaCheck, engineCheck, episodeRootsCheck, freeDiskCheck, imagesCheck, runtimesCheck, type CheckedImage, type CheckResult, type EngineInfo } from './checks.js';
import { connectEngine } from '../sandbox/docker/engine.js';

/** What `intercode doctor --json` prints; `healthy` is false when any check failed. */
export interface DoctorReport {
  healthy: boolean;
  endpoint: string;
  checks: CheckResult[];
}

/** A check that could not run because the engine does not answer. */
const notChecked = (id: string): CheckResult => ({ id, status: 'fail', summary: 'not checked: no engine answers', fix: 'npx intercode setup' });

/**
 * Runs every check: engine, cgroup version, runtimes, episode roots, disk-quota support, image state and
 * free disk, then what `extraChecks` find, in order (another backend's, e.g. a cluster's). Never throws
 * for what it finds; each finding is a check with its fix.
 */
export async function runDoctor(
  images: { images: readonly CheckedImage[]; perTask: readonly string[] },
  probe: ProbeOptions = {},
  extraChecks: readonly (() => Promise<readonly CheckResult[]>)[] = [],
): Promise<DoctorReport> {
  const facts = await probeHost(probe);
  const checks: CheckResult[] = [engineCheck(facts)];
  if (facts.engine.answers) {
    const docker: Docker = await connectEngine(facts.endpoint);
    const info = (await docker.info()) as EngineInfo;
    checks.push(cgroupCheck(info), runtimesCheck(info), await episodeRootsCheck(docker), diskQuotaCheck(info), await imagesCheck(docker, images.images, images.perTask));
    const local = facts.endpoint.startsWith('unix://') || facts.endpoint.startsWith('/');
    checks.push(freeDiskCheck(local && info.DockerRootDir ? info.DockerRootDir : '/'));
  } else {
    checks.push(cgroupCheck({}), notChecked('runtimes'), notChecked('episode-roots'), notChecked('disk-quota'), notChecked('images'), freeDiskCheck('/var/lib/docker'));
  }
  for (const extra of extraChecks) checks.push(...(await extra()));
  return { healthy: checks.every((c) => c.status !== 'fail'), endpoint: facts.endpoint, checks };
}
