import { lstat, opendir } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Bytes of disk a directory tree takes (allocated blocks, so a sparse file counts what it
 * holds, not its length), each hard-linked file once, no link followed. Entries that vanish
 * while it walks are skipped.
 */
export async function treeBytes(root: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const walk = async (dir: string): Promise<void> => {
    let handle;
    try {
      handle = await opendir(dir);
    } catch {
      return;
    }
    for await (const entry of handle) {
      const path = join(dir, entry.name);
      const stats = await lstat(path).catch(() => undefined);
      if (!stats) continue;
      if (stats.nlink > 1 && !stats.isDirectory()) {
        const key = `${stats.dev}:${stats.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      total += stats.blocks * 512;
      if (stats.isDirectory()) await walk(path);
    }
  };
  await walk(root);
  return total;
}

/** How far the host's free space must fall before the layer is measured again. */
const REMEASURE_AFTER_BYTES = 16 * 1024 * 1024;

/**
 * Watches a container's writable layer on the host (the overlay2 upperdir) against a limit,
 * cheaply: each {@link exceeded} call costs one statfs of the host file system holding the
 * layer; the layer itself is walked only when the host's free space has moved by
 * {@link REMEASURE_AFTER_BYTES} since it was last walked (a write or a removal that large
 * happened somewhere on that file system, maybe here).
 */
export class LayerWatch {
  private freeAtLastWalk = Number.NaN;
  private usedAtLastWalk = 0;
  private walking: Promise<number> | undefined;

  constructor(
    readonly upperDir: string,
    readonly limitBytes: number,
  ) {}

  /** The layer's size in bytes when it is over the limit, else undefined. */
  async exceeded(): Promise<number | undefined> {
    const used = await this.usedBytes();
    return used > this.limitBytes ? used : undefined;
  }

  /** The layer's size as last measured (measured again when the host's free space fell). */
  async usedBytes(): Promise<number> {
    let free: number;
    try {
      const fs = statfsSync(this.upperDir);
      free = fs.bavail * fs.bsize;
    } catch {
      return this.usedAtLastWalk;
    }
    if (Math.abs(this.freeAtLastWalk - free) < REMEASURE_AFTER_BYTES) return this.usedAtLastWalk;
    this.walking ??= treeBytes(this.upperDir).finally(() => (this.walking = undefined));
    this.usedAtLastWalk = await this.walking;
    this.freeAtLastWalk = free;
    return this.usedAtLastWalk;
  }
}
