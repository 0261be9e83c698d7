import type { Command } from 'commander';
import { bashTestbedRecipe } from '../../envs/bash/index.js';
import { pythonRecipe } from '../../envs/python/images.js';
import { ConfigError } from '../errors.js';
import { ensureImage } from '../images/image-builder.js';
import type { ImageRecipe } from '../images/recipe.js';
import { connectEngine } from '../sandbox/docker/engine.js';

const RECIPES: Record<string, (testbed?: string) => Promise<ImageRecipe>> = {
  bash: (testbed) => bashTestbedRecipe(testbed),
  python: () => pythonRecipe(),
};

/** `intercode images build [env…]`: builds what is missing, tagged by a hash of its inputs. */
export function registerImagesCommand(program: Command): void {
  const images = program.command('images').description('build the sandbox images');
  images
    .command('build')
    .argument('[envs...]', `environments (${Object.keys(RECIPES).join(', ')}); default: all`)
    .option('--testbed <path>', 'bash: build for this testbed (tarball or directory) instead of the built-in one')
    .description('build the base image (pulled, or bootstrapped offline with debootstrap) and the env images, if missing')
    .action(async (names: string[], flags: { testbed?: string }) => {
      const chosen = names.length > 0 ? names : Object.keys(RECIPES);
      for (const name of chosen) {
        if (!RECIPES[name]) throw new ConfigError('[envs]', `unknown environment "${name}"; known: ${Object.keys(RECIPES).join(', ')}`);
      }
      const docker = await connectEngine();
      for (const name of chosen) {
        const tag = await ensureImage(docker, await RECIPES[name]!(flags.testbed), (line) => process.stderr.write(`[${name}] ${line}\n`));
        console.log(`${name}: ${tag}`);
      }
    });
}
