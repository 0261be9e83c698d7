/** What the `step` bench measures: its `--json` result and the whole measurement its report is written from. */
import type { CpuUsage } from './host-cpu.js';
import type { MachineInfo } from './machine.js';
import type { RuntimeCost } from './runtime-compare.js';
import type { SampleSummary } from './stats.js';
import type { CONCURRENCY_LEVELS, StepBenchOptions } from './step-options.js';

/** The `--json` output: latencies in milliseconds, throughput in steps per second. */
export interface StepBenchResult {
  sessionP50Ms: number;
  sessionP95Ms: number;
  execP50Ms: number;
  /** execP50Ms / sessionP50Ms. */
  ratio: number;
  stepsPerSec: Record<`${(typeof CONCURRENCY_LEVELS)[number]}`, number>;
  /** With --compare-runtimes: each runtime's cost, measured in this run. */
  runtimes?: RuntimeCost[];
}

export interface AggregateLevel {
  sandboxes: number;
  steps: number;
  seconds: number;
  stepsPerSec: number;
  latency: SampleSummary;
  cpu: CpuUsage | undefined;
}

/** Everything one run measured, for the human report. */
export interface StepMeasurement {
  machine: MachineInfo;
  options: StepBenchOptions;
  session: SampleSummary;
  exec: SampleSummary;
  aggregate: AggregateLevel[];
  runtimes?: RuntimeCost[];
}
