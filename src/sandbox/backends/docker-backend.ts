import type Docker from 'dockerode';
import { ConfigError } from '../../errors.js';
import { ensureImage } from '../../images/image-builder.js';
import { cleanup } from '../docker/cleanup.js';
import { DockerRuntime } from '../docker/docker-runtime.js';
import { connectEngine } from '../docker/engine.js';
import { reapCrashedRuns } from '../lifecycle/reaper.js';
import { removeOrphanPoolFolders } from '../roots/root-pool.js';
import { EpisodeRootRuntime, episodeRootsUnsupported } from '../roots/root-runtime.js';
import type { SandboxRuntime } from '../types.js';
import type { BackendOptions, EngineTarget, SandboxBackend } from './backend.js';
import { MultiEngineRuntime } from './multi-engine-runtime.js';

const ENDPOINT_FORMS = /^(unix:\/\/\/|\/|tcp:\/\/|https?:\/\/)/;

/**
 * Parses `<endpoint>[=<weight>]` (weight 1 when left out), e.g. `unix:///run/docker-b.sock=2`.
 * @throws ConfigError naming `flag` when the endpoint has no known form or the weight is not a positive number.
 */
function parseDockerTarget(value: string, flag: string): EngineTarget {
  const match = /^(.*)=([^=]*)$/.exec(value);
  const endpoint = match ? match[1]! : value;
  const weightText = match ? match[2]! : '1';
  const weight = Number(weightText);
  if (!ENDPOINT_FORMS.test(endpoint)) {
    throw new ConfigError(flag, `must be unix:///path, /path, tcp://host:port or http(s)://host:port, optionally =weight; got "${value}"`);
  }
  if (endpoint.startsWith('tcp:') || endpoint.startsWith('http')) {
    try {
      new URL(endpoint.replace(/^tcp:/, 'http:'));
    } catch {
      throw new ConfigError(flag, `has an endpoint that is not a URL: "${endpoint}"`);
    }
  }
  if (weightText.trim() === '' || !Number.isFinite(weight) || weight <= 0) {
    throw new ConfigError(flag, `weight must be a positive number, got "${weightText}" in "${value}"`);
  }
  return { endpoint, weight };
}

/**
 * One engine's runtime: episode roots where asked for, or (`auto`) where the engine supports
 * them; else containers (docs/engines.md says which engines keep containers, and why).
 * @throws ConfigError when episode roots are asked for and the engine cannot give them.
 */
async function singleEngineRuntime(docker: Docker, options: BackendOptions): Promise<SandboxRuntime> {
  const { kind } = options.sandboxes;
  if (kind !== 'episode-roots' && kind !== 'auto') return new DockerRuntime(docker, options.sandboxes);
  const unsupported = await episodeRootsUnsupported(docker, options.sandboxes);
  if (unsupported === undefined) return new EpisodeRootRuntime(docker, options.sandboxes);
  if (kind === 'auto') return new DockerRuntime(docker, options.sandboxes);
  throw new ConfigError('--sandbox-kind', `episode-roots: ${unsupported}`);
}

/**
 * Refuses a runtime the engine does not have, before any image is built or sandbox made
 * (else every creation fails with the engine's own words, after the build).
 * @throws ConfigError naming --runtime, the engine and the runtimes it has.
 */
async function checkRuntime(docker: Docker, endpoint: string, runtime: string | undefined): Promise<void> {
  if (runtime === undefined) return;
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown>; DefaultRuntime?: string };
  const names = Object.keys(info.Runtimes ?? {});
  if (names.includes(runtime)) return;
  throw new ConfigError(
    '--runtime',
    `names "${runtime}", which the engine at ${endpoint} does not have: its runtimes are ${names.join(', ') || 'none listed'} (default ${info.DefaultRuntime ?? 'unknown'}; \`intercode doctor\` checks runc and runsc)`,
  );
}

/**
 * Sandboxes as containers of Docker engines: one engine, a plain {@link DockerRuntime}
 * (a single engine costs exactly what it did before there were several); several, a
 * {@link MultiEngineRuntime} spreading them by weight. Last in the list: every `--engine`
 * value no other backend claims is parsed as a Docker endpoint (or refused as one).
 */
export const dockerBackend: SandboxBackend = {
  name: 'docker',
  combinable: true,
  matches: () => true,
  parseTarget: parseDockerTarget,

  async open(targets, options) {
    if (targets.length === 1) {
      const docker = await connectEngine(targets[0]!.endpoint);
      await checkRuntime(docker, targets[0]!.endpoint, options.sandboxes.ociRuntime);
      return {
        runtime: await singleEngineRuntime(docker, options),
        ensureImage: (recipe, log) => ensureImage(docker, recipe, log),
        imageId: (tag) => docker.getImage(tag).inspect().then((image) => image.Id, () => undefined),
        status: () => undefined,
        close: () => undefined,
      };
    }
    if (options.sandboxes.kind === 'episode-roots') throw new ConfigError('--sandbox-kind', `episode-roots run on one local engine; ${targets.length} engines were given (with several, sandboxes are containers: use auto or containers)`);
    const multi = await MultiEngineRuntime.connect(targets, options);
    // Each engine that answers must have it (one that is down is checked by its first sandbox).
    try {
      for (const target of targets) {
        const docker = await connectEngine(target.endpoint).catch(() => undefined);
        if (docker) await checkRuntime(docker, target.endpoint, options.sandboxes.ociRuntime);
      }
    } catch (error) {
      multi.close();
      throw error;
    }
    return {
      runtime: multi,
      ensureImage: (recipe, log) => multi.ensureImage(recipe, log),
      // A copied image keeps its id, but which engine to ask is not fixed.
      imageId: async () => undefined,
      status: () => multi.status(),
      close: () => multi.close(),
    };
  },

  async cleanup(endpoint, request) {
    const docker = await connectEngine(endpoint);
    const removed = await cleanup(docker, {
      images: request.images,
      deadRunsOnly: request.deadRunsOnly,
      warmOnly: request.warmOnly,
      ...(request.testRun ? { testRun: request.testRun } : {}),
    });
    // Episode roots' folders of runs that died (a local engine only; elsewhere there are none).
    if (!request.warmOnly && !request.testRun) await removeOrphanPoolFolders(docker).catch(() => 0);
    const summary = `${endpoint}: removed ${removed.containers}${request.warmOnly ? ' kept-warm' : ''} container(s)${request.images ? ` and ${removed.images} image tag(s)` : ''}`;
    return { ...removed, summary };
  },

  async reapCrashedRuns(endpoint, options = {}) {
    const docker = await connectEngine(endpoint).catch(() => undefined);
    if (!docker) return 0;
    const removed = await reapCrashedRuns(docker, options);
    if (!options.testRun) await removeOrphanPoolFolders(docker).catch(() => 0);
    return removed;
  },
  // No doctorChecks: the default engine's are doctor's own (they need the host's facts: runtimes, cgroups, free disk).
};
