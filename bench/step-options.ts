import { ConfigError } from '../src/errors.js';
import { isClusterTarget, loadCluster, parseClusterTarget } from '../src/sandbox/kubernetes/cluster.js';
import { KubernetesRuntime } from '../src/sandbox/kubernetes/kubernetes-sandbox.js';
import { DockerRuntime } from '../src/sandbox/docker/docker-runtime.js';
import type Docker from 'dockerode';
import type { SandboxRuntime } from '../src/sandbox/types.js';
import { BASE_IMAGE } from '../src/images/image-builder.js';
import { parseBenchArgs, positiveNumber } from './bench-args.js';

/** The step bench's settings, resolved. */
export interface StepBenchOptions {
  /** Measured seconds per concurrency level in the aggregate phase. */
  durationSec: number;
  /** Image the sandboxes run; the base image is built when missing. */
  image: string;
  json: boolean;
  /** Timed ShellSession steps (after warm-up). */
  sessionSteps: number;
  /** Timed one-exec-per-step steps (after warm-up). */
  execSteps: number;
  /** The OCI runtime of the main measurement (undefined: the engine's default). */
  runtime?: string;
  /** Runtimes to compare afterwards in the same run, e.g. ['runc', 'runsc']. */
  compareRuntimes?: string[];
  /** Where sandboxes run: `docker` (the local engine) or `k8s[:CONTEXT[/NAMESPACE]]`. */
  engine: string;
}

/** Sandbox counts of the aggregate phase; they are also the keys of `stepsPerSec`. */
export const CONCURRENCY_LEVELS = [1, 8, 32] as const;

export const DEFAULT_STEP_OPTIONS: StepBenchOptions = {
  durationSec: 5,
  image: BASE_IMAGE,
  json: false,
  sessionSteps: 2000,
  execSteps: 200,
  engine: 'docker',
};

export const STEP_USAGE = `Usage: npm run bench -- step [options]

Latency and throughput of one env step (\`echo hi\`) in Docker sandboxes:
  1. one ShellSession (persistent bash over one attached stream): 200 warm-up steps,
     then --steps sequential timed steps -> p50, p95;
  2. one \`docker exec\` per step (InterCode's way) in the same sandbox: 10 warm-up
     steps, then --exec-steps timed steps -> p50; ratio = exec p50 / session p50;
  3. 1, 8 and 32 sandboxes, each with its own ShellSession in a closed loop, all at
     once: 1 s warm-up, then --duration seconds counted -> aggregate steps/s.
Every sandbox is removed at the end, on errors and on Ctrl-C / SIGTERM.

Options:
  --duration SECONDS  measured time per concurrency level (default ${DEFAULT_STEP_OPTIONS.durationSec})
  --image REF         sandbox image (default ${BASE_IMAGE}, built if missing)
  --steps N           timed ShellSession steps (default ${DEFAULT_STEP_OPTIONS.sessionSteps})
  --exec-steps N      timed docker-exec steps (default ${DEFAULT_STEP_OPTIONS.execSteps})
  --runtime NAME      the engine's OCI runtime for the sandboxes (runc, runsc…; default: the engine's)
  --compare-runtimes A,B
                      afterwards, per runtime: a fresh sandbox's start (create + shell), 1000
                      steps' p50/p95, removal; each measured twice (A,B,B,A) in this run
  --engine E          docker (the local engine, default) or k8s[:CONTEXT[/NAMESPACE]]: pods, each
                      step over the pod's exec WebSocket, one exec (a new WebSocket) per exec step
  --json              print only one JSON object on stdout:
                      {"sessionP50Ms","sessionP95Ms","execP50Ms","ratio","stepsPerSec":{"1","8","32"}}
                      (use \`npm run -s bench -- step --json\`: npm prints a banner otherwise)
  -h, --help          show this help
`;

/**
 * Parses the step bench's arguments.
 * @returns the options, or "help" when --help was given.
 * @throws ConfigError for an unknown option or a bad value (the message names the option).
 */
export function parseStepOptions(args: readonly string[]): StepBenchOptions | 'help' {
  const values = parseBenchArgs('step', args, {
    duration: { type: 'string' },
    image: { type: 'string' },
    steps: { type: 'string' },
    'exec-steps': { type: 'string' },
    runtime: { type: 'string' },
    'compare-runtimes': { type: 'string' },
    engine: { type: 'string' },
  });
  if (values === 'help') return 'help';
  const engine = (values.engine as string | undefined) ?? DEFAULT_STEP_OPTIONS.engine;
  if (engine !== 'docker' && !isClusterTarget(engine)) throw new ConfigError('--engine', `must be docker or k8s[:CONTEXT[/NAMESPACE]], got "${engine}"`);
  const image = values.image as string | undefined;
  if (image !== undefined && image.trim() === '') throw new ConfigError('--image', 'must not be empty');
  return {
    durationSec: positiveNumber('--duration', values.duration, DEFAULT_STEP_OPTIONS.durationSec, false),
    image: image ?? DEFAULT_STEP_OPTIONS.image,
    json: values.json === true,
    sessionSteps: positiveNumber('--steps', values.steps, DEFAULT_STEP_OPTIONS.sessionSteps, true),
    execSteps: positiveNumber('--exec-steps', values['exec-steps'], DEFAULT_STEP_OPTIONS.execSteps, true),
    ...(values.runtime !== undefined ? { runtime: runtimeName('--runtime', values.runtime as string) } : {}),
    ...(values['compare-runtimes'] !== undefined
      ? { compareRuntimes: (values['compare-runtimes'] as string).split(',').map((name) => runtimeName('--compare-runtimes', name.trim())) }
      : {}),
    engine,
  };
}

function runtimeName(flag: string, name: string): string {
  if (!/^[A-Za-z0-9][\w.-]*$/.test(name)) throw new ConfigError(flag, `must name runtimes such as runc or runsc, got "${name}"`);
  return name;
}

/** The runtime `--engine` names: the local engine's (with `ociRuntime`, e.g. runsc), or a Kubernetes cluster's (close it after). */
export async function stepRuntime(engine: string, docker: Docker, ociRuntime?: string): Promise<SandboxRuntime & { close?(): void }> {
  return engine === 'docker' ? new DockerRuntime(docker, ociRuntime ? { ociRuntime } : {}) : new KubernetesRuntime(await loadCluster(parseClusterTarget(engine)));
}
