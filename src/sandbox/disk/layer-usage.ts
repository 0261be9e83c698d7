import { execFile } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import { lstatSync, readdirSync, statfsSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Bytes of disk a directory tree takes (allocated blocks, so a sparse file counts what it
 * holds, not its length), each hard-linked file once, no link followed. Entries that vanish
 * while it walks are skipped. The walk names each entry by its full path, which an agent can
 * make longer than PATH_MAX by nesting folders: what lies below would go uncounted, and the
 * disk limit with it. Where a path is too long, GNU `du` (which walks by descriptor) measures
 * the whole tree instead, by the same rules.
 */
export async function treeBytes(root: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  let tooDeep = false;
  const pending = [root];
  for (let visits = 0; pending.length > 0 && !tooDeep; ) {
    const dir = pending.pop()!;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      tooDeep = (error as NodeJS.ErrnoException).code === 'ENAMETOOLONG';
      continue;
    }
    for (const name of names) {
      if (++visits % VISITS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
      const path = join(dir, name);
      let stats: Stats | undefined;
      try {
        stats = lstatSync(path, { throwIfNoEntry: false });
      } catch (error) {
        tooDeep ||= (error as NodeJS.ErrnoException).code === 'ENAMETOOLONG';
      }
      if (!stats) continue;
      if (stats.nlink > 1 && !stats.isDirectory()) {
        const key = `${stats.dev}:${stats.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      total += stats.blocks * 512;
      if (stats.isDirectory()) pending.push(path);
    }
  }
  return tooDeep ? duBytes(root) : total;
}

/**
 * Entries measured between two yields to the event loop. The walk uses the synchronous calls,
 * which cost a fraction of the CPU of the promise-based ones (a layer holds tens of paths).
 */
const VISITS_PER_TURN = 256;

/** What `du` counts below `root` (its own folder left out, as treeBytes leaves it out). */
async function duBytes(root: string): Promise<number> {
  const [{ stdout }, own] = await Promise.all([run('du', ['-s', '-B1', '-P', '--', root], { timeout: 300_000 }), lstat(root)]);
  return Number(stdout.split('\t', 1)[0]) - own.blocks * 512;
}

/** How far the host's free space must fall before the layer is measured again. */
const REMEASURE_AFTER_BYTES = 16 * 1024 * 1024;

/**
 * Watches a container's writable layer on the host (the overlay2 upperdir) against a limit,
 * cheaply: each {@link exceeded} call costs one statfs of the host file system holding the
 * layer and never waits; the layer itself is walked, in the background, only when the
 * host's free space has moved by {@link REMEASURE_AFTER_BYTES} since it was last walked (a
 * write or a removal that large happened somewhere on that file system, maybe here).
 */
export class LayerWatch {
  private freeAtLastWalk = Number.NaN;
  private usedAtLastWalk = 0;
  private walking: Promise<number> | undefined;

  constructor(
    readonly upperDir: string,
    readonly limitBytes: number,
  ) {}

  /**
   * The layer's size in bytes, as last measured, when it is over the limit, else undefined.
   * Starts a new measurement when the host's free space moved (its result counts from the
   * next call on).
   */
  exceeded(): number | undefined {
    this.remeasureIfMoved();
    return this.usedAtLastWalk > this.limitBytes ? this.usedAtLastWalk : undefined;
  }

  /**
   * As {@link exceeded}, but when the host's free space moved since the last measurement (or
   * one is under way), waits for the new one: one statfs when nothing moved.
   */
  async exceededNow(): Promise<number | undefined> {
    this.remeasureIfMoved();
    if (this.walking) await this.walking;
    return this.usedAtLastWalk > this.limitBytes ? this.usedAtLastWalk : undefined;
  }

  /** Measures the layer now (and waits for it). */
  async measure(): Promise<number> {
    this.remeasureIfMoved(true);
    return (await this.walking) ?? this.usedAtLastWalk;
  }

  private remeasureIfMoved(always = false): void {
    if (this.walking) return;
    let free: number;
    try {
      const fs = statfsSync(this.upperDir);
      free = fs.bavail * fs.bsize;
    } catch {
      return;
    }
    if (!always && Math.abs(this.freeAtLastWalk - free) < REMEASURE_AFTER_BYTES) return;
    this.freeAtLastWalk = free;
    this.walking = treeBytes(this.upperDir).then(
      (used) => {
        this.usedAtLastWalk = used;
        this.walking = undefined;
        return used;
      },
      () => {
        this.walking = undefined;
        return this.usedAtLastWalk;
      },
    );
  }
}
