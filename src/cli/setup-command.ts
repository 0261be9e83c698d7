import type { Command } from 'commander';
import { planSetup, probeHost, runSetup } from '../setup/index.js';
import { buildEnvImages } from './images-command.js';

/** `intercode setup`: makes a Docker engine answer (installing and starting one where it can) and builds the images. */
export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description(
      'make a Docker engine answer and build the images: as root on Debian/Ubuntu without an engine, install docker.io, ' +
        'debootstrap, runsc and btrfs-progs, register runsc, start dockerd (log: /var/log/intercode-dockerd.log) and wait for it; ' +
        'anywhere else print the commands for this machine and exit 1',
    )
    .option('--with-test-tools', 'also install what the test suite uses (chromium, tmux, python3-websockets, xfsprogs; root on Debian/Ubuntu)')
    .option('--no-images', 'stop once the engine answers, without building the images')
    .option('--json', 'print one JSON object: {"ok","situation","summary","endpoint","steps":[{"id","status","seconds","detail"}],"commands","elapsedSec"}')
    .action(async (flags: { withTestTools?: boolean; images: boolean; json?: boolean }) => {
      const log = (line: string) => process.stderr.write(`[setup] ${line}\n`);
      const facts = await probeHost();
      const plan = planSetup(facts, {
        withTestTools: !!flags.withTestTools,
        images: flags.images ? (endpoint, imageLog) => buildEnvImages(endpoint, [], imageLog) : false,
      });
      const result = await runSetup(facts, plan, log);
      if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
      else if (result.ok) console.log(`ready: an engine answers at ${result.endpoint} (${result.elapsedSec} s); next: npx intercode run bash`);
      else {
        const failed = result.steps.find((step) => step.status === 'failed');
        const lines = [failed ? `setup failed at ${failed.id}: ${failed.detail}` : `setup cannot go on: ${result.summary}`];
        if (result.commands.length > 0) lines.push(failed ? 'to fix it, run:' : 'run:', ...result.commands.map((c) => `  ${c}`));
        console.log(lines.join('\n'));
      }
      if (!result.ok) process.exitCode = 1;
    });
}
