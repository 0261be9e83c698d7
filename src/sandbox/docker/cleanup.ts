import type Docker from 'dockerode';
import { dirname, join } from 'node:path';
import { readdir } from 'node:fs/promises';
import { channelOwner, channelRoot, removeChannelDir } from './fifo-channel.js';
import { processAlive } from '../lifecycle/process-alive.js';
import { CHANNEL_LABEL, IMAGE_LABEL, OWNER_LABEL, OWNER_VALUE, RUN_LABEL, runLabelValue, TEST_LABEL, THREAD_LABEL } from './labels.js';
import { channelDir, containerRun, isThisHost, parseContainerName, removeAllWarm, removeExpiredWarm, warmChannelTag } from './keep-warm/warm-sandboxes.js';

export interface CleanupOptions {
  /** Only what one test run made (value of the test label). */
  testRun?: string;
  /** Also remove images the project built. */
  images?: boolean;
  /**
   * Only containers of runs whose process on this host is gone (crash reaping); containers
   * of runs on other hosts sharing the engine are kept, since we cannot tell. Default: all of ours.
   */
  deadRunsOnly?: boolean;
  /** Only the sandboxes kept warm between commands (see warm-sandboxes.ts), expired or not. */
  warmOnly?: boolean;
}

/**
 * Removes a container, waiting out a removal already under way (409: a dying run's own
 * removal goes on in the engine after the run is gone) and trying again if that one failed.
 * @returns false when the container could not be removed within `timeoutMs`.
 */
async function removeContainer(docker: Docker, id: string, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await docker.getContainer(id).remove({ force: true, v: true });
      return true;
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode;
      if (status === 404) return true;
      if (status !== 409 || Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/**
 * Removes the channel directories on this host whose process is gone: a run that died
 * (or whose containers went first) leaves them behind. With `tagsInUse` (the tags of every
 * container of ours on the engine), also those of parked or expiring sandboxes whose
 * container is gone (removed from outside, say).
 * @returns how many were removed.
 */
export async function removeOrphanChannels(tagsInUse?: ReadonlySet<string>): Promise<number> {
  const names = await readdir(channelRoot()).catch(() => []);
  const orphans = names.filter((name) => {
    const owner = channelOwner(name);
    if (owner !== undefined) return !processAlive(owner);
    const tag = warmChannelTag(name);
    return tag !== undefined && tagsInUse !== undefined && !tagsInUse.has(tag);
  });
  await Promise.all(orphans.map((name) => removeChannelDir(join(channelRoot(), name))));
  return orphans.length;
}

/** The tags (see warm-sandboxes.ts) of `containers`, whatever their state. */
function tagsOf(containers: readonly { Names?: string[] }[]): Set<string> {
  const tags = new Set<string>();
  for (const c of containers) {
    const name = parseContainerName(c.Names?.[0] ?? '');
    if (name.state !== 'other') tags.add(name.tag);
  }
  return tags;
}

/** The host channel directories a container may have: the one it was made with, and those its tag names (see warm-sandboxes.ts). */
function channelsOf(container: { Names?: string[]; Labels: Record<string, string> }): string[] {
  const dirs: string[] = [];
  const made = container.Labels[CHANNEL_LABEL];
  if (made && dirname(made) === channelRoot()) dirs.push(made);
  const name = parseContainerName(container.Names?.[0] ?? '');
  if (name.state !== 'other') dirs.push(channelDir(name.tag, 'warm'));
  if (name.state === 'run' && isThisHost(name.host)) dirs.push(channelDir(name.tag, name.pid));
  return dirs;
}

/**
 * Removes containers (and optionally images) the project created, found by label, and the
 * channel directories of runs on this host that are gone.
 * @returns how many of each were removed (a container already gone counts as removed).
 */
export async function cleanup(docker: Docker, options: CleanupOptions = {}): Promise<{ containers: number; images: number }> {
  // Parked sandboxes change hands by renaming: removed the same way, never under an adopter's feet.
  const warm = options.deadRunsOnly ? (await removeExpiredWarm(docker)).removed : await removeAllWarm(docker, options.testRun);
  if (options.warmOnly) return { containers: warm, images: 0 };
  const label = options.testRun ? [`${TEST_LABEL}=${options.testRun}`] : [`${OWNER_LABEL}=${OWNER_VALUE}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const doomed = containers.filter((c) => {
    const name = parseContainerName(c.Names?.[0] ?? '');
    if (name.state === 'warm') return false;
    if (!options.deadRunsOnly) return true;
    const run = containerRun(c);
    return run !== undefined && isThisHost(run.host) && !processAlive(run.pid);
  });
  const outcomes = await Promise.all(
    doomed.map(async (c) => {
      const removed = await removeContainer(docker, c.Id);
      if (removed) await Promise.all(channelsOf(c).map((dir) => removeChannelDir(dir)));
      return removed;
    }),
  );
  const removed = warm + outcomes.filter(Boolean).length;
  // What is left of the listing (taken after the parked ones were dealt with) is what is in
  // use. A test run's cleanup lists only its own containers: it cannot tell whose a parked channel is.
  const gone = new Set(doomed.filter((_, i) => outcomes[i]).map((c) => c.Id));
  const tagsInUse = options.testRun ? undefined : tagsOf(containers.filter((c) => !gone.has(c.Id)));
  await removeOrphanChannels(tagsInUse);
  let images = 0;
  if (options.images) {
    const imageLabel = options.testRun ? [`${TEST_LABEL}=${options.testRun}`] : [IMAGE_LABEL];
    for (const image of await docker.listImages({ filters: { label: imageLabel } })) {
      for (const tag of image.RepoTags?.length ? image.RepoTags : [image.Id]) {
        await docker.getImage(tag).remove({ force: true }).then(() => images++, () => undefined);
      }
    }
  }
  return { containers: removed, images };
}

/**
 * Removes the containers (and their channel directories) that worker thread `threadId` of
 * this process made: what a threaded VecEnv's shard leaves when its thread dies.
 * @returns how many were removed.
 */
export async function removeThreadSandboxes(docker: Docker, threadId: number): Promise<number> {
  const label = [`${RUN_LABEL}=${runLabelValue()}`, `${THREAD_LABEL}=${threadId}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const outcomes = await Promise.all(
    containers.map(async (c) => {
      const removed = await removeContainer(docker, c.Id);
      if (removed) await Promise.all(channelsOf(c).map((dir) => removeChannelDir(dir)));
      return removed;
    }),
  );
  return outcomes.filter(Boolean).length;
}
