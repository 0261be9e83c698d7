import type { Command } from 'commander';
import { BENCHES, runBenchCli } from '../bench/index.js';

/**
 * `intercode bench <name> [options]`: the benches of `npm run bench`, from an installed
 * package. One implementation (src/bench); the bench parses its own options, so they are
 * passed through untouched.
 */
export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description(`run a benchmark (${[...BENCHES.keys()].join(', ')}); the same benches as npm run bench; \`intercode bench <name> --help\` lists a bench's options, --json on each prints one object`)
    .argument('[name]', `the bench: ${[...BENCHES.keys()].join(', ')}`)
    .argument('[options...]', "the bench's own options (e.g. --json, --envs 1,4)")
    .allowUnknownOption()
    .helpOption(false)
    .action(async (name: string | undefined, options: string[]) => {
      process.exitCode = await runBenchCli(name === undefined ? [] : [name, ...options]);
    });
}
