import type Docker from 'dockerode';
import { ImageError } from '../../errors.js';
import { BASE_IMAGE, ensureBaseImage, ensureImage, type BuildLog } from '../../images/image-builder.js';
import type { ImageRecipe } from '../../images/recipe.js';

/** An engine as image provisioning sees it. */
export interface EngineClient {
  endpoint: string;
  docker: Docker;
}

async function imageId(docker: Docker, ref: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch {
    return undefined;
  }
}

/**
 * Copies image `ref` from one engine to another (`docker save | docker load`, streamed):
 * its id, tag and labels arrive unchanged, so content-hash tags computed from it hold on
 * the target too.
 * @throws ImageError IMAGE_BUILD_FAILED naming both engines.
 */
export async function transferImage(from: EngineClient, to: EngineClient, ref: string, log: BuildLog): Promise<void> {
  log(`copying ${ref} from ${from.endpoint} to ${to.endpoint}`);
  try {
    const archive = await from.docker.getImage(ref).get();
    const progress = (await to.docker.loadImage(archive as never)) as unknown as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      to.docker.modem.followProgress(progress, (error: Error | null, output: { error?: string }[]) => {
        const failed = output?.find((m) => m.error);
        if (error || failed) reject(error ?? new Error(failed!.error));
        else resolve();
      }),
    );
  } catch (error) {
    throw new ImageError('IMAGE_BUILD_FAILED', `Copying ${ref} from ${from.endpoint} to ${to.endpoint} failed: ${(error as Error).message}`, {
      details: { image: ref, from: from.endpoint, to: to.endpoint },
      cause: error,
    });
  }
  if (!(await imageId(to.docker, ref))) {
    throw new ImageError('IMAGE_BUILD_FAILED', `Copying ${ref} to ${to.endpoint} did not produce it`, { details: { image: ref, to: to.endpoint } });
  }
}

/**
 * Makes sure {@link BASE_IMAGE} exists on every engine: engines lacking it get a copy from
 * one that has it (seconds; bootstrapping it again takes minutes — see the README); when
 * none has it, it is made on the first engine ({@link ensureBaseImage}) and copied.
 */
export async function ensureBaseOnEngines(engines: readonly EngineClient[], log: BuildLog): Promise<void> {
  const present = await Promise.all(engines.map(async (e) => (await imageId(e.docker, BASE_IMAGE)) !== undefined));
  let source = engines.find((_, i) => present[i]);
  if (!source) {
    source = engines[0]!;
    await ensureBaseImage(source.docker, log);
  }
  for (const [i, engine] of engines.entries()) {
    if (engine !== source && !present[i]) await transferImage(source, engine, BASE_IMAGE, log);
  }
}

/** `recipe` and the recipes it is built on, parents first (the base image left out). */
function recipeChain(recipe: ImageRecipe): ImageRecipe[] {
  const chain: ImageRecipe[] = [];
  for (let link: ImageRecipe['parent'] = recipe; typeof link === 'object' && 'dockerfile' in link; link = link.parent) chain.unshift(link);
  return chain;
}

/**
 * Builds (or finds) `recipe`'s image on every engine. The first engine builds it with
 * {@link ensureImage}; an engine whose base image is the same one gets that image and the
 * images it is built on copied (same ids, so the same content-hash tags, and the engine
 * alone later finds the image without building its parents); an engine with a base of its
 * own builds it, under a tag of its own.
 * @returns the tag on each engine, by endpoint.
 */
export async function ensureImageOnEngines(
  engines: readonly EngineClient[],
  recipe: ImageRecipe,
  log: BuildLog,
): Promise<Map<string, string>> {
  await ensureBaseOnEngines(engines, log);
  const [first, ...rest] = engines;
  if (!first) throw new ImageError('IMAGE_MISSING', `No engine to build ${recipe.repository} on`);
  const tags = new Map([[first.endpoint, await ensureImage(first.docker, recipe, log)]]);
  const firstBase = await imageId(first.docker, BASE_IMAGE);
  for (const engine of rest) {
    const tag = tags.get(first.endpoint)!;
    if ((await imageId(engine.docker, BASE_IMAGE)) !== firstBase) {
      tags.set(engine.endpoint, await ensureImage(engine.docker, recipe, log));
      continue;
    }
    for (const link of recipeChain(recipe)) {
      const linkTag = link === recipe ? tag : await ensureImage(first.docker, link, log);
      if (!(await imageId(engine.docker, linkTag))) await transferImage(first, engine, linkTag, log);
    }
    tags.set(engine.endpoint, tag);
  }
  return tags;
}
