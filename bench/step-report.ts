import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../src/sandbox/types.js';
import { CPU_GROUPS } from './host-cpu.js';
import { formatMachine } from './machine.js';
import type { SampleSummary } from './stats.js';
import type { StepBenchResult, StepMeasurement } from './step-result.js';
import { formatTable } from './table.js';

const fixed = (value: number, digits: number) => value.toFixed(digits);

const LATENCY_HEADER = ['way', 'steps', 'p50 ms', 'p95 ms', 'p99 ms', 'mean ms', 'max ms'];

function latencyRow(way: string, summary: SampleSummary): string[] {
  return [way, String(summary.count), ...[summary.p50, summary.p95, summary.p99, summary.mean, summary.max].map((v) => fixed(v, 3))];
}

/** The human report of a step-bench run: machine, method, latency table, throughput table, CPU. */
export function formatStepReport(measurement: StepMeasurement, result: StepBenchResult): string {
  const { options, aggregate } = measurement;
  const lines = [
    `Step bench: \`echo hi\` as one env step, sandboxes from ${options.image}`,
    ...formatMachine(measurement.machine),
    '',
    'Latency of one step (one sandbox, steps one after another)',
    ...formatTable(LATENCY_HEADER, [
      latencyRow('ShellSession (one attached stream)', measurement.session),
      latencyRow('docker exec per step (InterCode)', measurement.exec),
    ]),
    `  exec p50 / session p50 = ${fixed(result.ratio, 1)}x`,
    '',
    `Aggregate throughput (each sandbox its own ShellSession in a closed loop, all at once;`,
    `1 s warm-up, then ${options.durationSec} s counted)`,
    ...formatTable(
      ['sandboxes', 'steps', 'steps/s', 'per sandbox/s', 'p50 ms', 'p95 ms'],
      aggregate.map((level) => [
        String(level.sandboxes),
        String(level.steps),
        fixed(level.stepsPerSec, 0),
        fixed(level.stepsPerSec / level.sandboxes, 0),
        fixed(level.latency.p50, 3),
        fixed(level.latency.p95, 3),
      ]),
    ),
  ];
  if (aggregate.every((level) => level.cpu)) {
    lines.push(
      '',
      'Host CPU during each counted window (cores busy; 1.00 = one core; from /proc)',
      ...formatTable(
        ['sandboxes', 'host', ...CPU_GROUPS],
        aggregate.map((level) => [
          String(level.sandboxes),
          fixed(level.cpu!.busyCores, 2),
          ...CPU_GROUPS.map((group) => fixed(level.cpu!.groups[group], 2)),
        ]),
      ),
      '  "other" includes processes that exited within the window and kernel time not charged to a process.',
      '',
      'Host CPU time per step (microseconds; the table above divided by steps/s)',
      ...formatTable(
        ['sandboxes', 'host', ...CPU_GROUPS],
        aggregate.map((level) => [
          String(level.sandboxes),
          fixed((level.cpu!.busyCores * 1e6) / level.stepsPerSec, 0),
          ...CPU_GROUPS.map((group) => fixed((level.cpu!.groups[group] * 1e6) / level.stepsPerSec, 0)),
        ]),
      ),
    );
  }
  if (measurement.runtimes) {
    const base = measurement.runtimes[0]!;
    lines.push('', `OCI runtimes, same run (a fresh sandbox each, measured twice in A,B,B,A order; × = against ${base.runtime}):`);
    for (const r of measurement.runtimes) {
      lines.push(
        `  ${r.runtime.padEnd(6)} (${r.transport}): start ${r.startMs.toFixed(0)} ms (×${(r.startMs / base.startMs).toFixed(2)}), ` +
          `step p50 ${r.stepP50Ms.toFixed(3)} ms (×${(r.stepP50Ms / base.stepP50Ms).toFixed(2)}), p95 ${r.stepP95Ms.toFixed(3)} ms, remove ${r.removeMs.toFixed(0)} ms`,
      );
    }
  }
  lines.push(
    '',
    'Method: wall time around ShellSession.run / Sandbox.exec in this Node process (performance.now),',
    `so a step includes the engine round trip and output parsing; every step's output is checked to be`,
    `"hi" with exit code 0. Sandboxes: network none, ${DEFAULT_LIMITS.cpus} CPU, ${DEFAULT_LIMITS.memoryBytes / 2 ** 20} MiB, ${DEFAULT_LIMITS.pids} pids,`,
    `capabilities ${DEFAULT_CAPABILITIES.join(' ')} only.`,
    `The ShellSession phase has 200 warm-up steps, the exec phase 10; sandboxes for 8 and 32 are added`,
    'before their level starts (the first is reused). Other load on the host skews every figure.',
    '',
  );
  return lines.join('\n');
}
