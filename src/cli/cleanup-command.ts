import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { backendOf } from '../sandbox/backends/backends.js';
import { addEngineFlag, engineTargets, type EngineFlags } from './engine-flag.js';

interface CleanupFlags extends EngineFlags {
  images?: boolean;
  deadOnly?: boolean;
  warm?: boolean;
  json?: boolean;
}

/** `intercode cleanup`: removes every container (and with --images, image) the project made, on each engine. */
export function registerCleanupCommand(program: Command): void {
  const command = program
    .command('cleanup')
    .description(
      'remove every sandbox intercode made (found by label), including those of runs still going; ' +
        '--dead-only keeps live runs\' and removes only those of crashed runs on this host (and kept-warm ones whose time is up); ' +
        '--warm removes only the sandboxes kept warm between commands (--keep-warm); --images also removes built images',
    )
    .option('--images', 'also remove the images intercode built')
    .option('--dead-only', 'only sandboxes whose creating process (on this host) is gone, and kept-warm ones past their time')
    .option('--warm', 'only the sandboxes kept warm for the next command (see --keep-warm), expired or not')
    .option('--json', 'print one JSON object: {"containers","images"} (totals over the engines)');
  addEngineFlag(command).action(async (flags: CleanupFlags) => {
    if (flags.warm && (flags.deadOnly || flags.images)) throw new ConfigError('--warm', 'removes only kept-warm sandboxes: use it without --dead-only and --images');
    const total = { containers: 0, images: 0 };
    for (const { endpoint } of engineTargets(flags)) {
      const removed = await backendOf(endpoint).cleanup(endpoint, { images: !!flags.images, deadRunsOnly: !!flags.deadOnly, warmOnly: !!flags.warm });
      total.containers += removed.containers;
      total.images += removed.images;
      if (!flags.json) console.log(removed.summary);
    }
    if (flags.json) console.log(JSON.stringify(total));
  });
}
