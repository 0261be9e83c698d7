import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { packagePath } from '../package-path.js';

/**
 * `intercode bench <name> [options]`: the benches of `npm run bench`, in a checkout of the
 * repository. They are test tooling, kept in `bench/` and not shipped with the package:
 * this command loads their compiled entry (`dist/bench/index.js`) when it is there and
 * says where to get it when it is not. The bench parses its own options, so they are
 * passed through untouched.
 */
export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description('run a benchmark of a checkout of the repository (the benches of npm run bench; not in an installed package); `intercode bench --help` lists them, `intercode bench <name> --help` lists a bench\'s options, --json on each prints one object')
    .argument('[name]', 'the bench (`intercode bench --help` lists them)')
    .argument('[options...]', "the bench's own options (e.g. --json, --envs 1,4)")
    .allowUnknownOption()
    .helpOption(false)
    .action(async (name: string | undefined, options: string[]) => {
      const { runBenchCli } = (await import(pathToFileURL(benchEntry()).href)) as { runBenchCli(args: string[]): Promise<number> };
      process.exitCode = await runBenchCli(name === undefined ? [] : [name, ...options]);
    });
}

/**
 * The compiled benches' entry under `root` (the package's folder).
 * @throws ConfigError naming `bench` when it is missing: not built yet in a checkout, or an installed package (which ships none).
 */
export function benchEntry(root = packagePath()): string {
  const entry = join(root, 'dist', 'bench', 'index.js');
  if (existsSync(entry)) return entry;
  if (existsSync(join(root, 'bench', 'index.ts'))) throw new ConfigError('bench', `${entry} is missing: run \`npm run build\` (npm ci does it) first`);
  throw new ConfigError('bench', 'the benches are not part of the installed package: run them from a checkout of the repository (git clone, npm ci, then `npm run bench -- <name>` or `npx intercode bench <name>`)');
}
