import type { Command } from 'commander';
import { ENV_PLUGINS, type EnvImage } from '../../envs/index.js';
import { ConfigError } from '../errors.js';
import { describeBuild, ensureImage, findImage, missingImages } from '../images/image-builder.js';
import { connectEngine } from '../sandbox/docker/engine.js';
import { ensureImageOnEngines } from '../sandbox/backends/image-provisioning.js';

/** An env's image, with the env it belongs to. */
export interface NamedEnvImage extends EnvImage {
  readonly env: string;
}

/** Every image the envs declare (their {@link EnvImage}s), in the order envs are listed; `testbed` as `images build --testbed`. */
export function envImages(testbed?: string): NamedEnvImage[] {
  return ENV_PLUGINS.flatMap((plugin) => plugin.images.list(testbed === undefined ? {} : { testbed }).map((image) => ({ ...image, env: plugin.name })));
}

/** What envs make images per task (none listed ahead), in words: `name: how`. */
export function perTaskImages(): string[] {
  return ENV_PLUGINS.flatMap((plugin) => (plugin.images.perTask ? [`${plugin.name}: ${plugin.images.perTask}`] : []));
}

/**
 * The images `names` pick: an env's name picks that env's images (its default ones, or all
 * with `all`), an image's own name (`<env>:<variant>`) that image; no names: every env's.
 * @throws ConfigError naming `flag` for a name that is neither, with the names known.
 */
export function chooseImages(names: readonly string[], all: boolean, flag: string, testbed?: string): NamedEnvImage[] {
  const images = envImages(testbed);
  if (names.length === 0) return images.filter((image) => all || image.byDefault);
  const chosen: NamedEnvImage[] = [];
  for (const name of names) {
    const isEnv = ENV_PLUGINS.some((plugin) => plugin.name === name);
    const picked = images.filter((image) => (isEnv ? image.env === name && (all || image.byDefault) : image.name === name));
    if (picked.length === 0) {
      const perTask = ENV_PLUGINS.find((plugin) => plugin.name === name)?.images.perTask;
      if (perTask) throw new ConfigError(flag, `names env "${name}", whose images are made per task (${perTask}): nothing to build ahead`);
      throw new ConfigError(flag, `names no env or image "${name}"; known: ${images.map((image) => image.name).join(', ')}`);
    }
    for (const image of picked) if (!chosen.includes(image)) chosen.push(image);
  }
  return chosen;
}

/** One image's outcome in `images build` and `setup`. */
export interface ImageOutcome {
  name: string;
  env: string;
  tag: string;
  /** Whether it (or an image it is built on) had to be made now. */
  built: boolean;
  seconds: number;
}

const describeOutcomes = (outcomes: readonly ImageOutcome[]) => outcomes.map((o) => `${o.name}: ${o.tag}`);

/**
 * Builds what is missing of `images` (default: every env's default images), first saying what
 * it will build and about how long that takes.
 * @returns `name: tag` per image, whether anything had to be built, and each image's outcome.
 * @throws EngineUnreachableError, ImageError.
 */
export async function buildEnvImages(
  endpoint: string | undefined,
  log: (line: string) => void,
  images: readonly NamedEnvImage[] = chooseImages([], false, '[envs]'),
): Promise<{ tags: string[]; built: boolean; images: ImageOutcome[] }> {
  const docker = await connectEngine(endpoint);
  const recipes = await Promise.all(images.map((image) => image.recipe()));
  // What the whole command will make, said once up front (images share parents: each is counted once).
  const seen = new Set<string>();
  const plan = [];
  for (const recipe of recipes) {
    for (const missing of await missingImages(docker, recipe)) {
      if (!seen.has(missing.image)) plan.push(missing);
      seen.add(missing.image);
    }
  }
  if (plan.length > 0) log(describeBuild(plan).replace(/^first use: /, ''));
  const outcomes: ImageOutcome[] = [];
  for (const [i, image] of images.entries()) {
    const began = Date.now();
    const built = !(await findImage(docker, recipes[i]!)).present;
    const tag = await ensureImage(docker, recipes[i]!, (line) => log(`[${image.name}] ${line}`), false);
    outcomes.push({ name: image.name, env: image.env, tag, built, seconds: Math.round((Date.now() - began) / 100) / 10 });
  }
  return { tags: describeOutcomes(outcomes), built: outcomes.some((o) => o.built), images: outcomes };
}

/**
 * Every default env image on `target`, copied from `source` (built there first where missing)
 * instead of built again: the base image and its env images keep their ids, so their
 * content-hash tags hold on both engines.
 * @returns `name: tag` per image, and whether anything was missing on `target`.
 */
export async function copyEnvImages(source: string, target: string, log: (line: string) => void): Promise<{ tags: string[]; built: boolean; images: ImageOutcome[] }> {
  const engines = [
    { endpoint: source, docker: await connectEngine(source) },
    { endpoint: target, docker: await connectEngine(target) },
  ];
  const outcomes: ImageOutcome[] = [];
  for (const image of chooseImages([], false, '[envs]')) {
    const began = Date.now();
    const recipe = await image.recipe();
    const built = !(await findImage(engines[1]!.docker, recipe)).present;
    const tag = (await ensureImageOnEngines(engines, recipe, (line) => log(`[${image.name}] ${line}`))).get(target)!;
    outcomes.push({ name: image.name, env: image.env, tag, built, seconds: Math.round((Date.now() - began) / 100) / 10 });
  }
  return { tags: describeOutcomes(outcomes), built: outcomes.some((o) => o.built), images: outcomes };
}

interface ImagesBuildFlags {
  env?: string[];
  all?: boolean;
  testbed?: string;
  json?: boolean;
}

/** `intercode images build [env…] [--env NAME]…`: builds what is missing, tagged by a hash of its inputs. */
export function registerImagesCommand(program: Command): void {
  const images = program.command('images').description('build the sandbox images');
  const listed = envImages();
  images
    .command('build')
    .argument('[envs...]', `envs or images (the same as --env)`)
    .option(
      '--env <name>',
      `an env's images (${ENV_PLUGINS.filter((p) => p.images.list({}).length > 0).map((p) => p.name).join(', ')}) or one image by name (${listed.map((i) => i.name).join(', ')}); repeatable; default: every env's`,
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option('--all', `also the images most runs never need (${listed.filter((i) => !i.byDefault).map((i) => `${i.name}: ${i.usedBy}`).join('; ')})`)
    .option('--testbed <path>', 'bash: build for this testbed (tarball or directory) instead of the built-in one')
    .option('--json', 'print one JSON object: {"images":[{"name","env","tag","built","seconds"}],"built","elapsedSec"}')
    .description(
      'build the base image (pulled, or bootstrapped offline with debootstrap) and the env images, if missing; says first what it builds and about how long. ' +
        `Made per task, not here: ${perTaskImages().join('; ') || 'none'}`,
    )
    .action(async (names: string[], flags: ImagesBuildFlags) => {
      const chosen = chooseImages([...names, ...(flags.env ?? [])], !!flags.all, '--env', flags.testbed);
      const began = Date.now();
      const result = await buildEnvImages(undefined, (line) => process.stderr.write(`${line}\n`), chosen);
      const elapsedSec = Math.round((Date.now() - began) / 100) / 10;
      if (flags.json) process.stdout.write(`${JSON.stringify({ images: result.images, built: result.built, elapsedSec })}\n`);
      else for (const o of result.images) console.log(`${o.name}: ${o.tag} (${o.built ? `built in ${o.seconds} s` : 'already built'})`);
    });
}
