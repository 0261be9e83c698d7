import type { Command } from 'commander';
import { ENV_PLUGINS } from '../../envs/index.js';
import { ConfigError } from '../errors.js';
import { ensureImage, findImage } from '../images/image-builder.js';
import type { ImageRecipe } from '../images/recipe.js';
import { connectEngine } from '../sandbox/docker/engine.js';
import { ensureImageOnEngines } from '../sandbox/multi/image-provisioning.js';

/** The images `images build` (and `setup`, and `doctor`'s check) cover, by env: those whose env gives a recipe; the others are built on first use. */
export const IMAGE_RECIPES: Readonly<Record<string, (testbed?: string) => Promise<ImageRecipe>>> = Object.fromEntries(
  ENV_PLUGINS.flatMap((plugin) => (plugin.imageRecipe ? [[plugin.name, (testbed?: string) => plugin.imageRecipe!(testbed)]] : [])),
);

/**
 * Builds what is missing of the named envs' images (all of {@link IMAGE_RECIPES} when none).
 * @returns `name: tag` per env, and whether anything had to be built.
 * @throws ConfigError for an unknown name, EngineUnreachableError, ImageError.
 */
export async function buildEnvImages(endpoint: string | undefined, names: readonly string[], log: (line: string) => void, testbed?: string): Promise<{ tags: string[]; built: boolean }> {
  const chosen = names.length > 0 ? names : Object.keys(IMAGE_RECIPES);
  for (const name of chosen) {
    if (!IMAGE_RECIPES[name]) throw new ConfigError('[envs]', `unknown environment "${name}"; known: ${Object.keys(IMAGE_RECIPES).join(', ')}`);
  }
  const docker = await connectEngine(endpoint);
  const tags: string[] = [];
  let built = false;
  for (const name of chosen) {
    const recipe = await IMAGE_RECIPES[name]!(testbed);
    if (!(await findImage(docker, recipe)).present) built = true;
    const tag = await ensureImage(docker, recipe, (line) => log(`[${name}] ${line}`));
    tags.push(`${name}: ${tag}`);
  }
  return { tags, built };
}

/**
 * Every env image on `target`, copied from `source` (built there first where missing)
 * instead of built again: the base image and its env images keep their ids, so their
 * content-hash tags hold on both engines.
 * @returns `name: tag` per env, and whether anything was missing on `target`.
 */
export async function copyEnvImages(source: string, target: string, log: (line: string) => void): Promise<{ tags: string[]; built: boolean }> {
  const engines = [
    { endpoint: source, docker: await connectEngine(source) },
    { endpoint: target, docker: await connectEngine(target) },
  ];
  const tags: string[] = [];
  let built = false;
  for (const [name, recipeOf] of Object.entries(IMAGE_RECIPES)) {
    const recipe = await recipeOf();
    if (!(await findImage(engines[1]!.docker, recipe)).present) built = true;
    tags.push(`${name}: ${(await ensureImageOnEngines(engines, recipe, (line) => log(`[${name}] ${line}`))).get(target)!}`);
  }
  return { tags, built };
}

/** `intercode images build [env…]`: builds what is missing, tagged by a hash of its inputs. */
export function registerImagesCommand(program: Command): void {
  const images = program.command('images').description('build the sandbox images');
  images
    .command('build')
    .argument('[envs...]', `environments (${Object.keys(IMAGE_RECIPES).join(', ')}); default: all`)
    .option('--testbed <path>', 'bash: build for this testbed (tarball or directory) instead of the built-in one')
    .description('build the base image (pulled, or bootstrapped offline with debootstrap) and the env images, if missing')
    .action(async (names: string[], flags: { testbed?: string }) => {
      for (const line of (await buildEnvImages(undefined, names, (line) => process.stderr.write(`${line}\n`), flags.testbed)).tags) console.log(line);
    });
}
