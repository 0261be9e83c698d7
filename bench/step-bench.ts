/**
 * The step bench: what one environment step costs through a persistent ShellSession
 * versus one `docker exec` per step, and how many steps per second 1, 8 and 32 sandboxes
 * sustain together. Options and method: {@link STEP_USAGE}.
 */
import type Docker from 'dockerode';
import { IntercodeError } from '../src/errors.js';
import { BASE_IMAGE, ensureBaseImage } from '../src/images/image-builder.js';
import { connectEngine } from '../src/sandbox/docker/engine.js';
import { ShellSession } from '../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox } from '../src/sandbox/types.js';
import { CPU_GROUPS, cpuUsageBetween, takeCpuSnapshot } from './host-cpu.js';
import { describeMachine } from './machine.js';
import { describeError, SandboxSet } from './sandbox-set.js';
import { summarize } from './stats.js';
import { CONCURRENCY_LEVELS, parseStepOptions, STEP_USAGE, stepRuntime, type StepBenchOptions } from './step-options.js';
import { formatStepReport } from './step-report.js';
import type { AggregateLevel, StepBenchResult, StepMeasurement } from './step-result.js';
import { compareRuntimes } from './runtime-compare.js';
import type { Bench, BenchIO } from './types.js';

const COMMAND = 'echo hi';
const SESSION_WARMUP_STEPS = 200;
const EXEC_WARMUP_STEPS = 10;
const AGGREGATE_WARMUP_MS = 1_000;
const CREATE_CONCURRENCY = 8;
const RUNTIME_STEPS = 1000;

function checkOutput(way: string, output: string, exitCode: number | null): void {
  if (output !== 'hi\n' || exitCode !== 0) {
    throw new Error(`${way}: \`${COMMAND}\` gave exit code ${exitCode} and output ${JSON.stringify(output.slice(0, 200))}`);
  }
}

async function sessionStep(session: ShellSession): Promise<number> {
  const started = performance.now();
  const result = await session.run(COMMAND);
  const elapsed = performance.now() - started;
  checkOutput('ShellSession', result.output, result.exitCode);
  return elapsed;
}

async function execStep(sandbox: Sandbox): Promise<number> {
  const started = performance.now();
  const result = await sandbox.exec(['/bin/bash', '-c', COMMAND]);
  const elapsed = performance.now() - started;
  checkOutput('docker exec', result.output.toString('utf8'), result.exitCode);
  return elapsed;
}

async function sequential(steps: number, step: () => Promise<number>, progress?: (done: number) => void): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < steps; i++) {
    samples.push(await step());
    if (progress && (i + 1) % 500 === 0) progress(i + 1);
  }
  return samples;
}

/** Every session in a closed loop for warm-up + duration; counts steps that end in the window. */
async function closedLoop(sessions: readonly ShellSession[], durationMs: number, containerIds: string[]): Promise<Omit<AggregateLevel, 'sandboxes'>> {
  const windowStart = performance.now() + AGGREGATE_WARMUP_MS;
  const windowEnd = windowStart + durationMs;
  const latencies: number[] = [];
  let cpuStart: ReturnType<typeof takeCpuSnapshot>;
  let cpuEnd: ReturnType<typeof takeCpuSnapshot>;
  const startTimer = setTimeout(() => (cpuStart = takeCpuSnapshot(containerIds)), AGGREGATE_WARMUP_MS);
  const endTimer = setTimeout(() => (cpuEnd = takeCpuSnapshot(containerIds)), AGGREGATE_WARMUP_MS + durationMs);
  const loop = async (session: ShellSession) => {
    while (performance.now() < windowEnd) {
      const elapsed = await sessionStep(session);
      const ended = performance.now();
      if (ended >= windowStart && ended < windowEnd) latencies.push(elapsed);
    }
  };
  try {
    await Promise.all(sessions.map(loop));
  } finally {
    clearTimeout(startTimer);
    clearTimeout(endTimer);
  }
  if (latencies.length === 0) throw new Error(`no step finished within the ${durationMs / 1000} s counted; give a longer --duration`);
  const seconds = durationMs / 1000;
  return {
    steps: latencies.length,
    seconds,
    stepsPerSec: latencies.length / seconds,
    latency: summarize(latencies),
    cpu: cpuStart && cpuEnd ? cpuUsageBetween(cpuStart, cpuEnd) : undefined,
  };
}

async function measure(
  docker: Docker,
  options: StepBenchOptions,
  set: SandboxSet,
  sessions: ShellSession[],
  log: (line: string) => void,
): Promise<StepMeasurement> {
  const machine = await describeMachine(docker);
  log(`engine: Docker ${machine.dockerServerVersion}; host: ${machine.hostCores} cores; load ${machine.loadAverage1m.toFixed(2)}`);
  if (options.image === BASE_IMAGE) await ensureBaseImage(docker, (line) => log(`image: ${line}`));
  const containerIds: string[] = [];
  const sandboxes: Sandbox[] = [];
  const addSessions = async (count: number) => {
    const open = async () => {
      const sandbox = await set.create();
      sandboxes.push(sandbox);
      containerIds.push(sandbox.id);
      sessions.push(await ShellSession.open(sandbox));
    };
    for (let made = 0; made < count; made += CREATE_CONCURRENCY) {
      await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, count - made) }, open));
    }
  };
  log(`creating a sandbox from ${options.image}`);
  await addSessions(1);
  const first = sandboxes[0]!;

  log(`ShellSession: ${SESSION_WARMUP_STEPS} warm-up steps, then ${options.sessionSteps} timed`);
  await sequential(SESSION_WARMUP_STEPS, () => sessionStep(sessions[0]!));
  const session = summarize(await sequential(options.sessionSteps, () => sessionStep(sessions[0]!), (done) => log(`  ${done}/${options.sessionSteps}`)));
  log(`  p50 ${session.p50.toFixed(3)} ms, p95 ${session.p95.toFixed(3)} ms`);

  log(`docker exec: ${EXEC_WARMUP_STEPS} warm-up steps, then ${options.execSteps} timed`);
  await sequential(EXEC_WARMUP_STEPS, () => execStep(first));
  const exec = summarize(await sequential(options.execSteps, () => execStep(first)));
  log(`  p50 ${exec.p50.toFixed(3)} ms, p95 ${exec.p95.toFixed(3)} ms`);

  const aggregate: AggregateLevel[] = [];
  for (const sandboxes of CONCURRENCY_LEVELS) {
    if (sessions.length < sandboxes) {
      log(`creating ${sandboxes - sessions.length} more sandbox(es)`);
      await addSessions(sandboxes - sessions.length);
    }
    log(`${sandboxes} sandbox(es): ${AGGREGATE_WARMUP_MS / 1000} s warm-up, ${options.durationSec} s measured`);
    const level = { sandboxes, ...(await closedLoop(sessions.slice(0, sandboxes), options.durationSec * 1000, containerIds)) };
    log(`  ${Math.round(level.stepsPerSec)} steps/s (p50 ${level.latency.p50.toFixed(3)} ms per step)`);
    if (level.cpu) {
      const groups = CPU_GROUPS.map((group) => `${group} ${level.cpu!.groups[group].toFixed(2)}`).join(', ');
      log(`  CPU cores busy: host ${level.cpu.busyCores.toFixed(2)} = ${groups}`);
    }
    aggregate.push(level);
  }
  if (options.compareRuntimes) {
    log(`runtimes ${options.compareRuntimes.join(', ')}: a fresh sandbox each, ${RUNTIME_STEPS} timed steps, measured twice`);
    const image = options.image;
    const runtimes = await compareRuntimes(docker, image, options.compareRuntimes, RUNTIME_STEPS, { 'io.intercode-ts.bench': 'step' }, log);
    return { machine, options, session, exec, aggregate, runtimes };
  }
  return { machine, options, session, exec, aggregate };
}

/** The `--json` figures from a measurement. */
export function stepResult(measurement: StepMeasurement): StepBenchResult {
  const round = (value: number, digits: number) => Number(value.toFixed(digits));
  const perSec = (n: number) => round(measurement.aggregate.find((level) => level.sandboxes === n)!.stepsPerSec, 1);
  return {
    sessionP50Ms: round(measurement.session.p50, 4),
    sessionP95Ms: round(measurement.session.p95, 4),
    execP50Ms: round(measurement.exec.p50, 4),
    ratio: round(measurement.exec.p50 / measurement.session.p50, 2),
    stepsPerSec: { '1': perSec(1), '8': perSec(8), '32': perSec(32) },
    ...(measurement.runtimes
      ? {
          runtimes: measurement.runtimes.map((r) => ({
            ...r,
            startMs: round(r.startMs, 1),
            stepP50Ms: round(r.stepP50Ms, 4),
            stepP95Ms: round(r.stepP95Ms, 4),
            removeMs: round(r.removeMs, 1),
          })),
        }
      : {}),
  };
}

async function runStepBench(args: readonly string[], io: BenchIO): Promise<number> {
  const log = (line: string) => void io.stderr.write(`step: ${line}\n`);
  let options: StepBenchOptions | 'help';
  try {
    options = parseStepOptions(args);
  } catch (error) {
    io.stderr.write(`bench step: ${(error as Error).message}\nRun \`npm run bench -- step --help\` for the options.\n`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(STEP_USAGE);
    return 0;
  }
  let docker: Docker;
  try {
    docker = await connectEngine();
  } catch (error) {
    io.stderr.write(`bench step: ${(error as Error).message}\n`);
    return 1;
  }
  const runtime = await stepRuntime(options.engine, docker, options.runtime);
  if (options.engine !== 'docker') log(`sandboxes: Kubernetes pods (${options.engine})`);
  const set = new SandboxSet(runtime, {
    image: options.image,
    hostname: 'bench',
    limits: DEFAULT_LIMITS,
    capabilities: DEFAULT_CAPABILITIES,
    labels: { 'io.intercode-ts.bench': 'step' },
  });
  const sessions: ShellSession[] = [];
  const uninstall = set.removeOnSignals(log);
  try {
    const measurement = await measure(docker, options, set, sessions, log);
    io.stdout.write(options.json ? `${JSON.stringify(stepResult(measurement))}\n` : formatStepReport(measurement, stepResult(measurement)));
    return 0;
  } catch (error) {
    if (set.interruptedBy) await new Promise(() => undefined); // the signal handler exits
    const code = error instanceof IntercodeError ? ` [${error.code}]` : '';
    io.stderr.write(`bench step: ${describeError(error)}${code}\n`);
    return 1;
  } finally {
    for (const session of sessions) session.close();
    const { removed, failed, errors } = await set.destroyAll();
    const problem = failed ? `; ${failed} could not be removed (${describeError(errors[0])}); run \`intercode cleanup\`` : '';
    log(`removed ${removed} sandbox(es)${problem}`);
    runtime.close?.();
    uninstall();
  }
}

export const stepBench: Bench = {
  name: 'step',
  summary: 'latency of one step (ShellSession vs docker exec) and steps/s with 1, 8, 32 sandboxes',
  run: runStepBench,
};
