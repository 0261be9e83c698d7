import type { Command } from 'commander';
import { runDoctor } from '../doctor/index.js';
import { IMAGE_RECIPES } from './images-command.js';

const MARK = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;

/** `intercode doctor`: what this machine can run, each finding with its fix; exit 0 when healthy. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('check the engine, cgroup version, runtimes (runc, runsc), disk-quota support, image state and free disk, each with its fix; exit 0 when nothing fails, 1 otherwise')
    .option('--json', 'print one JSON object: {"healthy","endpoint","checks":[{"id","status","summary","fix"}]} (status ok, warn or fail)')
    .action(async (flags: { json?: boolean }) => {
      const recipes = Object.fromEntries(Object.entries(IMAGE_RECIPES).map(([name, recipe]) => [name, () => recipe()]));
      const report = await runDoctor(recipes);
      if (flags.json) process.stdout.write(`${JSON.stringify(report)}\n`);
      else {
        for (const check of report.checks) {
          console.log(`${MARK[check.status]}  ${check.id.padEnd(10)}  ${check.summary}`);
          if (check.fix) console.log(`      ${''.padEnd(10)}  fix: ${check.fix}`);
        }
        console.log(report.healthy ? 'healthy' : 'not healthy: fix the FAIL lines');
      }
      if (!report.healthy) process.exitCode = 1;
    });
}
