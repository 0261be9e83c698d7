import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * What a gold's outcome depends on, as plain data: the image (tag and id), the env's options
 * that change how the gold runs or is measured, and the task record. Every field is part of
 * the key: change one and the entry is a different one.
 */
export type GoldKey = Readonly<Record<string, string | number | boolean | null | readonly unknown[] | Readonly<Record<string, unknown>>>>;

/**
 * Where a gold's verification runs ran. `new-sandboxes`: each run in a sandbox made for it
 * from the image, never one restored after an earlier episode (whose answer may be what that
 * episode left: a directory's size, an atime). `fixed-data-server`: on the harness's own
 * connection to a server whose data no session can change (the read-only SQL server), which
 * answers a read as a new server from the same image would. A store trusts one kind only.
 */
export type GoldVerification = 'new-sandboxes' | 'fixed-data-server';

/**
 * A stored entry: the gold was run twice in clean sandboxes and both runs agreed (`stable`),
 * or they did not; where the runs ran ({@link GoldVerification}); with how long the longer
 * of the two runs took, when it was measured.
 */
export type StoredGold<T> = ({ stable: true; outcome: T } | { stable: false }) & { verifiedIn: GoldVerification; durationMs?: number };

/**
 * Bumped when the entry format changes, so entries of an older format are never read.
 * 2: entries say where they were verified; those of format 1 may hold a restored sandbox's
 * answer (verified in pooled sandboxes restored in place), so they are not trusted.
 */
const FORMAT = 2;

/**
 * The default location: `$INTERCODE_GOLD_CACHE`, else `$XDG_CACHE_HOME/intercode-ts/golds`,
 * else `~/.cache/intercode-ts/golds`.
 */
export function defaultGoldCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INTERCODE_GOLD_CACHE) return env.INTERCODE_GOLD_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'intercode-ts', 'golds');
}

/** JSON with object keys sorted at every level, so equal keys hash equally whatever their field order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Verified gold outcomes on disk, one JSON file per key (named by the SHA-256 of the key's
 * canonical JSON), written atomically (a temporary file renamed into place), so concurrent
 * processes sharing a folder never read half an entry. An entry holds its key too: a file
 * whose key differs from the one asked for, that does not parse, or whose outcome `isOutcome`
 * rejects, or that does not say it was verified as the store trusts, is treated as absent (and
 * overwritten by the next verification). Nothing here knows
 * what a gold is; envs give the key and the outcome's codec.
 */
export class GoldStore<T> {
  constructor(
    readonly dir: string,
    private readonly codec: { encode(outcome: T): unknown; decode(stored: unknown): T | undefined },
    /** The only verification whose entries this store trusts. */
    readonly trusted: GoldVerification = 'new-sandboxes',
  ) {}

  /** The file an entry for `key` lives in. */
  pathOf(key: GoldKey): string {
    return join(this.dir, `${createHash('sha256').update(canonical({ format: FORMAT, key })).digest('hex')}.json`);
  }

  /**
   * The entry for `key`, or undefined when there is none (or it is unreadable). Read
   * synchronously: an entry is a few KiB, read once per task and process, and the promise
   * API's open/stat/read/close round trips through the thread pool cost more of this
   * process's CPU than the read itself (profiled: the largest item of a scored episode).
   */
  async get(key: GoldKey): Promise<StoredGold<T> | undefined> {
    let text: string;
    try {
      text = readFileSync(this.pathOf(key), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const entry = JSON.parse(text) as { format?: unknown; key?: unknown; verifiedIn?: unknown; stable?: unknown; outcome?: unknown; durationMs?: unknown };
      if (entry.format !== FORMAT || canonical(entry.key) !== canonical(key) || entry.verifiedIn !== this.trusted) return undefined;
      const verified = { verifiedIn: this.trusted, ...(typeof entry.durationMs === 'number' && Number.isFinite(entry.durationMs) && entry.durationMs >= 0 ? { durationMs: entry.durationMs } : {}) } as const;
      if (entry.stable === false) return { stable: false, ...verified };
      if (entry.stable !== true) return undefined;
      const outcome = this.codec.decode(entry.outcome);
      return outcome === undefined ? undefined : { stable: true, outcome, ...verified };
    } catch {
      return undefined;
    }
  }

  /**
   * Stores the entry for `key`. Failing to write (a read-only folder, a full disk) loses only
   * the saving: the caller's run goes on. @returns whether it was written.
   */
  async put(key: GoldKey, entry: StoredGold<T>): Promise<boolean> {
    const path = this.pathOf(key);
    const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    const body = {
      format: FORMAT,
      key,
      verifiedIn: entry.verifiedIn,
      stable: entry.stable,
      ...(entry.stable ? { outcome: this.codec.encode(entry.outcome) } : {}),
      ...(entry.durationMs === undefined ? {} : { durationMs: entry.durationMs }),
    };
    try {
      await mkdir(this.dir, { recursive: true });
      await writeFile(temporary, `${JSON.stringify(body)}\n`);
      await rename(temporary, path);
      return true;
    } catch {
      await rm(temporary, { force: true }).catch(() => undefined);
      return false;
    }
  }
}
