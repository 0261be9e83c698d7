import type Docker from 'dockerode';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageError } from '../errors.js';
import { IMAGE_LABEL, OWNER_LABEL, OWNER_VALUE } from '../sandbox/docker/labels.js';
import { recipeTag, type ImageRecipe } from './recipe.js';
import { packEntries } from './tar.js';

/** The local name of the base image every env image is built on. */
export const BASE_IMAGE = 'intercode-ts/base:bookworm';
/** Pulled as the base where a registry answers. */
export const UPSTREAM_BASE = 'debian:bookworm-slim';

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
 * Makes sure {@link BASE_IMAGE} exists: pulls `debian:bookworm-slim` where a registry
 * answers, else builds Debian bookworm offline with `debootstrap --variant=minbase` and
 * `docker import`s it (needs root and the debootstrap package).
 * @returns the base image id. @throws ImageError IMAGE_BUILD_FAILED naming what is missing.
 */
export async function ensureBaseImage(docker: Docker, log: BuildLog): Promise<string> {
  const existing = await imageId(docker, BASE_IMAGE);
  if (existing) return existing;
  const [repo, tag] = BASE_IMAGE.split(':') as [string, string];
  try {
    log(`pulling ${UPSTREAM_BASE}`);
    const stream = await docker.pull(UPSTREAM_BASE);
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    await docker.getImage(UPSTREAM_BASE).tag({ repo, tag });
    return (await imageId(docker, BASE_IMAGE))!;
  } catch (error) {
    log(`no registry answered (${(error as Error).message.split('\n')[0]}); bootstrapping Debian bookworm offline`);
  }
  const root = await mkdtemp(join(tmpdir(), 'intercode-rootfs-'));
  try {
    const mirror = process.env.INTERCODE_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
    await run('debootstrap', ['--variant=minbase', 'bookworm', root, mirror], log).catch((error: Error) => {
      throw new ImageError(
        'IMAGE_BUILD_FAILED',
        `Could not build the base image: no registry answered and debootstrap failed (${error.message.slice(0, 400)}). ` +
          'Install it with `apt-get install debootstrap` and run as root, or make a registry reachable.',
        { cause: error },
      );
    });
    const tar = spawn('tar', ['-C', root, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const labels = Object.entries(labelsForImages('base')).map(([k, v]) => `LABEL ${k}=${v}`);
    const stream = (await docker.importImage(tar.stdout as never, { repo, tag, changes: ['CMD ["bash"]', ...labels] } as never)) as unknown as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
    const id = await imageId(docker, BASE_IMAGE);
    if (!id) throw new ImageError('IMAGE_BUILD_FAILED', `docker import did not produce ${BASE_IMAGE}`);
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
 * inputs. The build has host networking (for apt); containers never do.
 * @returns the image tag. @throws ImageError IMAGE_BUILD_FAILED with the build's last lines.
 */
export async function ensureImage(docker: Docker, recipe: ImageRecipe, log: BuildLog): Promise<string> {
  const parentRef = recipe.parent === 'base' ? BASE_IMAGE : await ensureImage(docker, recipe.parent, log);
  const parentId = recipe.parent === 'base' ? await ensureBaseImage(docker, log) : (await imageId(docker, parentRef))!;
  const tag = recipeTag(recipe, parentId);
  if (await imageId(docker, tag)) return tag;
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
    );
  } catch (error) {
    throw new ImageError('IMAGE_BUILD_FAILED', `Building ${recipe.repository} failed: ${(error as Error).message}\n${lines.slice(-15).join('\n')}`, {
      details: { repository: recipe.repository, tag },
      cause: error,
    });
  }
  return tag;
}
