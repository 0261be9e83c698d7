import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Task } from '../../src/datasets/index.js';
import { DatasetError } from '../../src/errors.js';
import { directoryEntries, packEntries } from '../../src/images/tar.js';

/** Where each episode's files go: `/ctf/<task_id>/`, also the shell's starting directory. */
export const CTF_ROOT = '/ctf';

/** A folder name that never reaches a sandbox, at any depth (reference write-ups and solvers). */
export const HIDDEN_FOLDER = 'solution';

/** Task ids become one path segment under /ctf. */
const SAFE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

export const taskDirectory = (task: Task) => `${CTF_ROOT}/${task.id}`;

/**
 * The default asset folder for a task file: `task_assets` beside it (InterCode's layout,
 * `data/ctf/ic_ctf.json` next to `data/ctf/task_assets/<task_id>/`), when it exists.
 */
export function assetsBeside(dataFile: string): string | undefined {
  const dir = join(dirname(dataFile), 'task_assets');
  return existsSync(dir) ? dir : undefined;
}

/**
 * Task files in InterCode's task_assets layout: `<root>/<task_id>/…`. Each task's folder is
 * packed as a tar archive rooted at `<task_id>/`, without any `solution/` folder and
 * without symbolic links (so nothing outside the task's folder can come along), and kept
 * for the next episode of the same task.
 */
export class TaskAssets {
  private readonly packed = new Map<string, Promise<Buffer>>();

  constructor(readonly root: string) {}

  /**
   * Checks that the root is a folder and every task id is a safe folder name.
   * @returns the ids of tasks that have no files here (a missing folder or only `solution/`).
   * @throws DatasetError naming the root, or the record whose `task_id` is unusable.
   */
  async check(tasks: readonly Task[], dataFile: string): Promise<string[]> {
    const info = await stat(this.root).catch(() => undefined);
    if (!info?.isDirectory()) throw new DatasetError({ file: this.root }, 'the CTF asset folder does not exist or is not a folder');
    const empty: string[] = [];
    for (const task of tasks) {
      if (!SAFE_ID.test(task.id)) {
        throw new DatasetError({ file: dataFile, record: task.index + 1, field: 'task_id' }, `"${task.id}" cannot name a folder under ${CTF_ROOT}`);
      }
      const files = (await this.entries(task)).filter((e) => e.type === 'file');
      if (files.length === 0) empty.push(task.id);
    }
    return empty;
  }

  /** The task's files as a tar archive rooted at `<task_id>/` (an empty folder when it has none). */
  archive(task: Task): Promise<Buffer> {
    let archive = this.packed.get(task.id);
    if (!archive) {
      archive = this.entries(task).then(packEntries);
      this.packed.set(task.id, archive);
      archive.catch(() => this.packed.delete(task.id));
    }
    return archive;
  }

  private async entries(task: Task) {
    const dir = join(this.root, task.id);
    if (!existsSync(dir)) return [{ name: task.id, type: 'directory' as const, mode: 0o755 }];
    const all = await directoryEntries(dir, task.id);
    return all.filter((entry) => !entry.name.split('/').slice(1).includes(HIDDEN_FOLDER));
  }
}
