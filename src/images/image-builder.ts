import type Docker from 'dockerode';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageError } from '../errors.js';
import { IMAGE_LABEL, OWNER_LABEL, OWNER_VALUE } from '../labels.js';
import { DEBIAN_BOOKWORM, debootstrapArgs, verifyPinnedRelease, type BaseImage } from './base-images.js';
import { recipeTag, type ImageRecipe } from './recipe.js';
import { packEntries } from './tar.js';

/** The local name of the default base image env images are built on (`parent: 'base'`). */
export const BASE_IMAGE = DEBIAN_BOOKWORM.tag;
/** Pulled as the default base where a registry answers. */
export const UPSTREAM_BASE = DEBIAN_BOOKWORM.upstream;

export type BuildLog = (line: string) => void;

async function imageId(docker: Docker, ref: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch {
    return undefined;
  }
}

function run(command: string, args: string[], log: BuildLog): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const collect = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4000);
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(line);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${tail}`))));
  });
}

/**
 * Image labels. Containers inherit their image's labels, so images carry only the owner
 * and role — never a run or test label, which would mark every later container too.
 */
function labelsForImages(role: string): Record<string, string> {
  return { [OWNER_LABEL]: OWNER_VALUE, [IMAGE_LABEL]: role };
}

/**
 * Makes sure `base` (default {@link DEBIAN_BOOKWORM}, i.e. {@link BASE_IMAGE}) exists: pulls
 * its upstream image where a registry answers, else bootstraps it offline with
 * `debootstrap --variant=minbase` and `docker import`s it (needs root and the debootstrap package).
 * @returns the base image id. @throws ImageError IMAGE_BUILD_FAILED naming what is missing or wrong.
 */
export async function ensureBaseImage(docker: Docker, log: BuildLog, base: BaseImage = DEBIAN_BOOKWORM): Promise<string> {
  const existing = await imageId(docker, base.tag);
  if (existing) return existing;
  return onceAtATime(docker, base.tag, () => makeBaseImage(docker, log, base));
}

/** Pulls or bootstraps `base` (see {@link ensureBaseImage}). */
async function makeBaseImage(docker: Docker, log: BuildLog, base: BaseImage): Promise<string> {
  const [repo, tag] = base.tag.split(':') as [string, string];
  log(describeBuild([{ image: base.tag, kind: 'bootstrap', ...(base.typicalBuildSeconds ? { typicalSeconds: base.typicalBuildSeconds } : {}) }]));
  try {
    log(`pulling ${base.upstream}`);
    const stream = await docker.pull(base.upstream);
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    await docker.getImage(base.upstream).tag({ repo, tag });
    return (await imageId(docker, base.tag))!;
  } catch (error) {
    log(`no registry answered (${(error as Error).message.split('\n')[0]}); bootstrapping ${base.suite} offline`);
  }
  const root = await mkdtemp(join(tmpdir(), 'intercode-rootfs-'));
  try {
    await run('debootstrap', debootstrapArgs(base, root), log).catch((error: Error) => {
      throw new ImageError(
        'IMAGE_BUILD_FAILED',
        `Could not build the base image ${base.tag}: no registry answered and debootstrap failed (${error.message.slice(0, 400)}). ` +
          'Install it with `apt-get install debootstrap` and run as root, or make a registry reachable.',
        { cause: error },
      );
    });
    await verifyPinnedRelease(base, root);
    await base.finish?.(root);
    const tar = spawn('tar', ['-C', root, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const labels = Object.entries(labelsForImages('base')).map(([k, v]) => `LABEL ${k}=${v}`);
    const stream = (await docker.importImage(tar.stdout as never, { repo, tag, changes: ['CMD ["bash"]', ...labels] } as never)) as unknown as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    const id = await imageId(docker, base.tag);
    if (!id) throw new ImageError('IMAGE_BUILD_FAILED', `docker import did not produce ${base.tag}`);
    return id;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

interface BuildMessage {
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/**
 * Builds (or finds) the image for `recipe` and its parents, tagged by a hash of their
 * inputs, first saying on `log` what it builds and about how long that takes (unless
 * `announce` is false: the caller said it for several images at once). The build has host
 * networking (for apt); containers never do.
 * @returns the image tag. @throws ImageError IMAGE_BUILD_FAILED with the build's last lines.
 */
export async function ensureImage(docker: Docker, recipe: ImageRecipe, log: BuildLog, announce = true): Promise<string> {
  await ensureBaseImage(docker, log, baseOf(recipe)); // says itself what it makes
  const missing = announce ? await missingImages(docker, recipe) : [];
  if (missing.length > 0) log(describeBuild(missing));
  return ensureChain(docker, recipe, log);
}

/** One image a build must make: its name (a base image's tag, or a recipe's repository) and about how long it takes. */
export interface MissingImage {
  image: string;
  /** How it is made: `bootstrap` is a base image (pulled where a registry answers, else bootstrapped); `build` a Dockerfile. */
  kind: 'bootstrap' | 'build';
  typicalSeconds?: number;
}

/** The images of `recipe`'s chain that do not exist yet, base first (empty when its image exists). Builds nothing. */
export async function missingImages(docker: Docker, recipe: ImageRecipe): Promise<MissingImage[]> {
  const chain = recipeChain(recipe);
  const base = baseOf(recipe);
  const missing: MissingImage[] = [];
  let parentId = await imageId(docker, base.tag);
  if (!parentId) missing.push({ image: base.tag, kind: 'bootstrap', ...(base.typicalBuildSeconds ? { typicalSeconds: base.typicalBuildSeconds } : {}) });
  for (const link of chain) {
    const id = parentId && (await imageId(docker, recipeTag(link, parentId)));
    if (!id) missing.push({ image: link.repository, kind: 'build', ...(link.typicalBuildSeconds ? { typicalSeconds: link.typicalBuildSeconds } : {}) });
    parentId = id || undefined;
  }
  return missing;
}

/** `recipe` and the recipes it is built on, parents first. */
function recipeChain(recipe: ImageRecipe): ImageRecipe[] {
  const chain: ImageRecipe[] = [];
  for (let link: ImageRecipe['parent'] = recipe; typeof link !== 'string' && !('suite' in link); link = link.parent) chain.unshift(link);
  return chain;
}

/** The base image at the root of `recipe`'s chain. */
function baseOf(recipe: ImageRecipe): BaseImage {
  const root = recipeChain(recipe)[0]!.parent as BaseImage | 'base';
  return root === 'base' ? DEBIAN_BOOKWORM : root;
}

const roughly = (seconds: number) => (seconds < 90 ? `${Math.round(seconds)} s` : `${(seconds / 60).toFixed(1)} min`);

/**
 * The line said before a first build: what is built and about how long it takes (the
 * recipes' figures, measured on the project's 2-core machine), so a first run does not look hung.
 */
export function describeBuild(missing: readonly MissingImage[]): string {
  const parts = missing.map((m) => `${m.image} (${m.kind === 'bootstrap' ? 'pulled, or bootstrapped offline: ' : ''}${m.typicalSeconds ? `about ${roughly(m.typicalSeconds)}` : 'time not measured'})`);
  const known = missing.filter((m) => m.typicalSeconds);
  const total = known.reduce((sum, m) => sum + m.typicalSeconds!, 0);
  const all = known.length === missing.length ? `about ${roughly(total)} on a 2-core machine` : known.length > 0 ? `more than ${roughly(total)} on a 2-core machine` : 'no measured time';
  return `first use: building ${parts.join(', then ')} — ${all}, once; later runs reuse ${missing.length > 1 ? 'them' : 'it'}`;
}

/** Builds (or finds) `recipe`'s image and its parents' (see {@link ensureImage}). */
async function ensureChain(docker: Docker, recipe: ImageRecipe, log: BuildLog): Promise<string> {
  const base = recipe.parent === 'base' ? DEBIAN_BOOKWORM : 'suite' in recipe.parent ? recipe.parent : undefined;
  const parentRef = base ? base.tag : await ensureChain(docker, recipe.parent as ImageRecipe, log);
  const parentId = base ? await ensureBaseImage(docker, log, base) : (await imageId(docker, parentRef))!;
  const tag = recipeTag(recipe, parentId);
  if (await imageId(docker, tag)) return tag;
  return onceAtATime(docker, tag, () => buildTagged(docker, recipe, parentRef, tag, log));
}

/** Work under way per engine and key (an image tag): see {@link onceAtATime}. */
const underWay = new WeakMap<Docker, Map<string, Promise<string>>>();

/**
 * `work()`, unless work for `key` on `docker` is under way already: then that work's result.
 * Two envs opened at once (SQL envs over two dumps share the server image) would otherwise
 * build the same image twice, and the tag would move to the second, leaving the first untagged.
 */
function onceAtATime(docker: Docker, key: string, work: () => Promise<string>): Promise<string> {
  let running = underWay.get(docker);
  if (!running) underWay.set(docker, (running = new Map()));
  const current = running.get(key);
  if (current) return current;
  const started = work().finally(() => running.delete(key));
  running.set(key, started);
  return started;
}

/** Builds `recipe` on its parent `parentRef` under `tag`. */
async function buildTagged(docker: Docker, recipe: ImageRecipe, parentRef: string, tag: string, log: BuildLog): Promise<string> {
  log(`building ${tag}`);
  const context = await packEntries([
    { name: 'Dockerfile', type: 'file', content: Buffer.from(recipe.dockerfile), mode: 0o644 },
    ...Object.entries(recipe.files).map(([name, content]) => ({ name, type: 'file' as const, content, mode: 0o644 })),
  ]);
  const lines: string[] = [];
  try {
    const stream = await docker.buildImage(context as never, {
      t: tag,
      buildargs: { BASE: parentRef },
      networkmode: 'host',
      labels: labelsForImages(recipe.repository),
      rm: true,
      forcerm: true,
    });
    // Past the recipe's time limit the response is cut: the engine cancels a build whose client is gone.
    const limit = recipe.buildTimeoutMs;
    const timer = limit === undefined ? undefined : setTimeout(() => (stream as unknown as { destroy(error: Error): void }).destroy(new Error(`the build ran past its ${limit / 1000} s limit and was cancelled`)), limit);
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(
        stream,
        (error: Error | null, output: BuildMessage[]) => {
          const failed = output?.find((m) => m.error);
          if (error || failed) reject(new Error(error?.message ?? failed?.error));
          else resolve();
        },
        (message: BuildMessage) => {
          for (const line of (message.stream ?? '').split('\n')) {
            if (!line.trim()) continue;
            lines.push(line);
            if (/^Step \d+\/\d+/.test(line)) log(line);
          }
        },
      ),
    ).finally(() => clearTimeout(timer));
  } catch (error) {
    await removeStepImages(docker, lines);
    throw new ImageError('IMAGE_BUILD_FAILED', `Building ${recipe.repository} failed: ${(error as Error).message}\n${lines.slice(-15).join('\n')}`, {
      details: { repository: recipe.repository, tag },
      cause: error,
    });
  }
  return tag;
}

/**
 * The image ids a legacy build's output names as its steps' results: a ` ---> <id>` line
 * right after the step's own line, after ` ---> Using cache`, or after the builder removed
 * the step's container. Not such a line anywhere else: a `RUN` step's output (a dump being
 * loaded, say) may print anything.
 */
export function stepImageIds(buildOutput: readonly string[]): string[] {
  return buildOutput.flatMap((line, i) => {
    const id = /^ ---> ([0-9a-f]{12,64})$/.exec(line)?.[1];
    const before = buildOutput[i - 1] ?? '';
    return id && /^(Step \d+\/\d+ : | ---> Using cache$|Removing intermediate container )/.test(before) ? [id] : [];
  });
}

/**
 * After a failed build: the images its finished steps left (` ---> <id>` in the build's
 * output), newest first, each removed when nothing is tagged on it and no other image
 * builds on it (the engine refuses otherwise: a step's image that an earlier build's
 * image stands on stays). Without this every failed build left untagged images behind.
 */
async function removeStepImages(docker: Docker, buildOutput: readonly string[]): Promise<void> {
  for (const id of stepImageIds(buildOutput).reverse()) {
    const image = docker.getImage(id);
    const tags = await image.inspect().then((info) => info.RepoTags ?? [], () => undefined);
    if (tags?.length === 0) await image.remove().catch(() => undefined);
  }
}

/**
 * Whether `recipe`'s image exists, without building anything: its tag when it and its
 * parents are there, else the first missing image (a base image's tag, or a recipe's
 * repository when its parent is missing so its tag cannot be known yet).
 */
export async function findImage(docker: Docker, recipe: ImageRecipe): Promise<{ present: true; tag: string } | { present: false; missing: string }> {
  const base = recipe.parent === 'base' ? DEBIAN_BOOKWORM : 'suite' in recipe.parent ? recipe.parent : undefined;
  let parentId: string | undefined;
  if (base) {
    parentId = await imageId(docker, base.tag);
    if (!parentId) return { present: false, missing: base.tag };
  } else {
    const parent = await findImage(docker, recipe.parent as ImageRecipe);
    if (!parent.present) return parent;
    parentId = (await imageId(docker, parent.tag))!;
  }
  const tag = recipeTag(recipe, parentId);
  return (await imageId(docker, tag)) ? { present: true, tag } : { present: false, missing: tag };
}
