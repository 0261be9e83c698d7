import type { Command } from 'commander';
import { cleanup } from '../sandbox/docker/cleanup.js';
import { connectEngine } from '../sandbox/docker/engine.js';

/** `intercode cleanup`: removes every container (and with --images, image) the project made. */
export function registerCleanupCommand(program: Command): void {
  program
    .command('cleanup')
    .description('remove sandboxes left behind by crashed runs (found by label); --images also removes built images')
    .option('--images', 'also remove the images intercode built')
    .option('--dead-only', 'only sandboxes whose creating process is gone')
    .action(async (flags: { images?: boolean; deadOnly?: boolean }) => {
      const removed = await cleanup(await connectEngine(), { images: !!flags.images, deadRunsOnly: !!flags.deadOnly });
      console.log(`removed ${removed.containers} container(s)${flags.images ? ` and ${removed.images} image tag(s)` : ''}`);
    });
}
