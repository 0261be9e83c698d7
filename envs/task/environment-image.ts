import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { DatasetError, ImageError } from '../../src/errors.js';
import { DEBIAN_BOOKWORM, UBUNTU_JAMMY, type BaseImage } from '../../src/images/base-images.js';
import type { ImageRecipe } from '../../src/images/recipe.js';
import { directoryEntries } from '../../src/images/tar.js';
import type { TaskDir } from './task-dir.js';

/** Base images we can make offline (debootstrap), by the names Dockerfiles give them. */
const KNOWN_BASES: readonly BaseImage[] = [DEBIAN_BOOKWORM, UBUNTU_JAMMY];

/** The build argument our image builder passes the parent's name in (see ImageRecipe.parent). */
const BASE_ARG = 'BASE';

/** Where task images are tagged: `intercode-ts/task:<hash of the build context and parent>`. */
export const TASK_REPOSITORY = 'intercode-ts/task';

/** A task's image: its recipe, and the directory its shell starts in (the Dockerfile's last WORKDIR). */
export interface EnvironmentImage {
  recipe: ImageRecipe;
  workdir: string;
  /** The first stage's FROM as the Dockerfile wrote it. */
  from: string;
}

/** The first `FROM` line: its image and where the image name is in the text. */
function firstFrom(dockerfile: string): { image: string; start: number; end: number } | undefined {
  const match = /^[ \t]*FROM[ \t]+(?:--platform=\S+[ \t]+)?(\S+)/im.exec(dockerfile);
  if (!match) return undefined;
  const end = match.index + match[0].length;
  return { image: match[1]!, start: end - match[1]!.length, end };
}

/** The last stage's last WORKDIR, resolved against the ones before it; `/` when there is none. */
export function dockerfileWorkdir(dockerfile: string): string {
  const stages = dockerfile.split(/^[ \t]*FROM[ \t]/im);
  let dir = '/';
  for (const line of (stages.at(-1) ?? '').split('\n')) {
    const m = /^[ \t]*WORKDIR[ \t]+(.+?)[ \t]*$/i.exec(line);
    if (m) dir = posix.resolve(dir, m[1]!.replace(/^["']|["']$/g, ''));
  }
  return dir;
}

/**
 * The recipe of `task`'s image: its environment/ folder as the build context (every file
 * is in the tag's hash, so the image is rebuilt exactly when one changes), its Dockerfile
 * with the first FROM pointing at the parent we provide: one of our offline base images
 * where it names one's upstream (`debian:bookworm-slim`, `ubuntu:22.04`), else an image
 * the engine already has (`imageId` finds it).
 * @throws ImageError IMAGE_MISSING naming the image and the command that would fetch it.
 */
export async function environmentImage(task: TaskDir, imageId: (ref: string) => Promise<string | undefined>): Promise<EnvironmentImage> {
  const dockerfileText = await readFile(posix.join(task.environmentDir, 'Dockerfile'), 'utf8');
  const from = firstFrom(dockerfileText);
  if (!from) throw new ImageError('IMAGE_BUILD_FAILED', `${task.environmentDir}/Dockerfile has no FROM line`, { details: { task: task.config.name } });
  const lastStage = dockerfileText.split(/^[ \t]*FROM[ \t]/im).at(-1) ?? '';
  const user = /^[ \t]*USER[ \t]+(\S+)/im.exec(lastStage)?.[1];
  if (user && !/^(root|0)(:(root|0))?$/.test(user)) {
    throw new DatasetError(
      { file: posix.join(task.environmentDir, 'Dockerfile') },
      `sets USER ${user}: the task env runs the agent's shell as root (the harness's own processes in the sandbox need root); not supported`,
    );
  }
  const known = KNOWN_BASES.find((b) => b.upstream === from.image || b.tag === from.image);
  let parent: BaseImage;
  if (known) parent = known;
  else if (await imageId(from.image)) {
    // An image the engine has: its id goes into our tag's hash like a base image's.
    parent = { tag: from.image, upstream: from.image, suite: '', mirrorVariable: '' };
  } else {
    throw new ImageError(
      'IMAGE_MISSING',
      `Task ${task.config.name}: its Dockerfile is FROM ${from.image}, which the engine does not have and cannot be made offline here ` +
        `(offline bases: ${KNOWN_BASES.map((b) => b.upstream).join(', ')}). Fetch it with \`docker pull ${from.image}\`, ` +
        `or build a local image of that name with the same packages.`,
      { details: { task: task.config.name, image: from.image } },
    );
  }
  const dockerfile = `ARG ${BASE_ARG}\n${dockerfileText.slice(0, from.start)}\${${BASE_ARG}}${dockerfileText.slice(from.end)}`;
  const files: Record<string, Buffer> = {};
  for (const entry of await directoryEntries(task.environmentDir, '.')) {
    if (entry.type === 'file' && entry.name !== './Dockerfile') files[entry.name.slice(2)] = entry.content!;
  }
  // One repository for every task: the tag is the hash of the build context, so tasks whose
  // contexts are the same share one image (and one warm pool).
  const { buildTimeoutSec } = task.config.environment;
  const recipe = { repository: TASK_REPOSITORY, dockerfile, files, parent, ...(buildTimeoutSec ? { buildTimeoutMs: buildTimeoutSec * 1000 } : {}) };
  return { recipe, workdir: dockerfileWorkdir(dockerfileText), from: from.image };
}
