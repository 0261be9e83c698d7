/**
 * Removing a folder that holds what an agent wrote. Node's recursive `rm` names every entry
 * by its full path and gives up past PATH_MAX (ENAMETOOLONG), which an agent reaches by
 * nesting folders: what it left would outlive the episode. GNU `rm` walks by descriptor and
 * has no such limit, so it takes over then (`--one-file-system`: never into a mount). Neither
 * follows a link.
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Removes `dir` and everything below it, however deep; nothing to do when it is absent. */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENAMETOOLONG') throw error;
    await run('rm', ['-rf', '--one-file-system', '--', dir], { timeout: 300_000 });
  }
}
