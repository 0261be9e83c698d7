import type Docker from 'dockerode';
import { hostname } from 'node:os';
import { IMAGE_LABEL, OWNER_LABEL, OWNER_VALUE, RUN_LABEL, TEST_LABEL } from './labels.js';

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
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes containers (and optionally images) the project created, found by label.
 * @returns how many of each were removed.
 */
export async function cleanup(docker: Docker, options: CleanupOptions = {}): Promise<{ containers: number; images: number }> {
  const label = options.testRun ? [`${TEST_LABEL}=${options.testRun}`] : [`${OWNER_LABEL}=${OWNER_VALUE}`];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const host = hostname();
  const doomed = containers.filter((c) => {
    if (!options.deadRunsOnly) return true;
    const [pid, runHost] = (c.Labels[RUN_LABEL] ?? '').split('@');
    return runHost === host && !processAlive(Number(pid));
  });
  await Promise.all(doomed.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
  let images = 0;
  if (options.images) {
    const imageLabel = options.testRun ? [`${TEST_LABEL}=${options.testRun}`] : [IMAGE_LABEL];
    for (const image of await docker.listImages({ filters: { label: imageLabel } })) {
      for (const tag of image.RepoTags?.length ? image.RepoTags : [image.Id]) {
        await docker.getImage(tag).remove({ force: true }).then(() => images++, () => undefined);
      }
    }
  }
  return { containers: doomed.length, images };
}
