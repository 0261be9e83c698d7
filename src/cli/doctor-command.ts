import type { Command } from 'commander';
import { runDoctor, type CheckResult } from '../doctor/index.js';
import { backendOf, SANDBOX_BACKENDS } from '../sandbox/backends/backends.js';
import { ConfigError } from '../errors.js';
import { envImages, perTaskImages } from './images-command.js';

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

/** `intercode doctor`: what this machine can run, each finding with its fix; exit 0 when healthy. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      'check the engine, cgroup version, runtimes (runc, runsc), disk-quota support, image state and free disk, and a Kubernetes cluster ' +
        'when one is named or KUBECONFIG is set, each with its fix; exit 0 when nothing fails, 1 otherwise',
    )
    .option(
      '--engine <k8s[:CONTEXT[/NAMESPACE]]>',
      'also check this Kubernetes cluster: the apiserver answers and pods may be created in the namespace (a server-side dry run); a problem fails. ' +
        'Without it, a cluster found through KUBECONFIG is checked and a problem only warns',
    )
    .option('--json', 'print one JSON object: {"healthy","endpoint","checks":[{"id","status","summary","fix"}]} (status ok, warn or fail)')
    .action(async (flags: { json?: boolean; engine?: string }) => {
      const report = await runDoctor({ images: envImages(), perTask: perTaskImages() }, {}, backendChecks(flags.engine));
      if (flags.json) process.stdout.write(`${JSON.stringify(report)}\n`);
      else {
        const width = Math.max(...report.checks.map((check) => check.id.length));
        for (const check of report.checks) {
          console.log(`${MARK[check.status]}  ${check.id.padEnd(width)}  ${check.summary}`);
          if (check.fix) console.log(`      ${''.padEnd(width)}  fix: ${check.fix}`);
        }
        console.log(report.healthy ? 'healthy' : 'not healthy: fix the FAIL lines');
      }
      if (!report.healthy) process.exitCode = 1;
    });
}

/**
 * The checks of the backend `--engine` names (a problem fails), or of one the user's
 * environment implies, e.g. a cluster through KUBECONFIG (a problem only warns).
 * @throws ConfigError when `--engine` names a backend with no checks of its own (a Docker engine: doctor checks DOCKER_HOST's).
 */
function backendChecks(engine: string | undefined): (() => Promise<CheckResult[]>)[] {
  if (engine !== undefined) {
    const backend = backendOf(engine);
    if (!backend.doctorChecks) throw new ConfigError('--engine', `names the cluster doctor checks besides the Docker engine (DOCKER_HOST): k8s, k8s:CONTEXT or k8s:CONTEXT/NAMESPACE, got "${engine}"`);
    backend.parseTarget(engine, '--engine');
    return [() => backend.doctorChecks!(engine, true)];
  }
  return SANDBOX_BACKENDS.flatMap((backend) => {
    const implied = backend.impliedDoctorTarget?.(process.env);
    return implied !== undefined && backend.doctorChecks ? [() => backend.doctorChecks!(implied, false)] : [];
  });
}
