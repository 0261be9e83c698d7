/**
 * Run folders: a command that writes results (`run`, `eval`, `collect`, `train`, `replay`,
 * `rescore`) puts them in one folder per run, `runs/<command>-<UTC time>/` unless its
 * output flags say otherwise, with a `result.json`: the figures its `--json` prints, the
 * exact command line, versions, the engine, and a digest of the tasks played. The last line
 * the command prints names the folder and the `intercode view` command for it.
 */

import type { Command } from 'commander';
import { createHash } from 'node:crypto';
import { mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Task } from '../datasets/index.js';
import { ConfigError } from '../errors.js';
import { engineTargets, sandboxSettings, type EngineFlags } from './engine-flag.js';
import { packageVersion } from './package-version.js';

/** The variable that moves the root of default run folders (tests point it at a temporary folder). */
export const RUNS_ROOT_VARIABLE = 'INTERCODE_RUNS_DIR';
export const RESULT_FILE = 'result.json';

/** Adds `--run-dir` to `command` (its default folder is said in the help). */
export function addRunDirFlag(command: Command, holds: string): Command {
  return command.option('--run-dir <dir>', `the run's folder: ${holds} and result.json (default: runs/${command.name()}-<UTC time>/, under $${RUNS_ROOT_VARIABLE} instead of runs/ when set)`);
}

const stamp = (now: Date) => now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-');

/**
 * Creates and returns the run folder: `given` (created if missing; may hold files), else a
 * new `<root>/<command>-<time>` (`-2`, `-3`… when two runs start in the same second).
 * @throws ConfigError naming `--run-dir` when the folder cannot be made.
 */
export function openRunFolder(command: string, given: string | undefined, variables: Readonly<Record<string, string | undefined>> = process.env, now = new Date()): string {
  try {
    if (given !== undefined) {
      mkdirSync(given, { recursive: true });
      return given;
    }
    const root = variables[RUNS_ROOT_VARIABLE] || 'runs';
    mkdirSync(root, { recursive: true });
    for (let n = 1; ; n++) {
      const dir = join(root, `${command}-${stamp(now)}${n === 1 ? '' : `-${n}`}`);
      try {
        mkdirSync(dir);
        // A command that fails before writing anything leaves no empty folder (rmdir removes only an empty one).
        process.once('exit', () => {
          try {
            rmdirSync(dir);
          } catch {
            // not empty: the run's
          }
        });
        return dir;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError('--run-dir', `cannot be made (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/** The tasks a run played, as `result.json` records them: where they came from, how many, and a digest of their ids, queries and golds. */
export function datasetFacts(source: string | undefined, tasks: readonly Task[]): { source: string; tasks: number; sha256: string } {
  const hash = createHash('sha256');
  for (const t of tasks) hash.update(JSON.stringify([t.id, t.query, t.gold])).update('\n');
  return { source: source ?? '(built-in)', tasks: tasks.length, sha256: hash.digest('hex') };
}

/** The engines and sandbox settings a command's flags name, as `result.json` records them. */
export function engineFacts(flags: Partial<EngineFlags>): Record<string, unknown> {
  const settings = sandboxSettings(flags);
  return { targets: engineTargets(flags), runtime: settings.ociRuntime ?? null, diskLimitBytes: settings.diskLimitBytes ?? null };
}

export interface RunResult {
  command: string;
  startedAt: Date;
  /** What the command's `--json` prints. */
  figures: unknown;
  /** From {@link datasetFacts}, where the command played tasks. */
  dataset?: ReturnType<typeof datasetFacts> | null;
  /** From {@link engineFacts}, where the command used sandboxes; plus how episodes were run, in words. */
  engine?: Record<string, unknown> | null;
  /** Files of the run, relative to its folder. */
  files?: Record<string, string>;
}

/**
 * Writes `<dir>/result.json`.
 * @returns its path.
 */
export function writeRunResult(dir: string, result: RunResult, argv: readonly string[] = process.argv): string {
  const path = join(dir, RESULT_FILE);
  const args = argv.slice(2);
  const quoted = args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`));
  const record = {
    command: result.command,
    commandLine: `intercode ${quoted.join(' ')}`,
    argv: args,
    cwd: process.cwd(),
    startedAt: result.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    versions: { intercode: packageVersion(), node: process.version, platform: `${process.platform}-${process.arch}` },
    engine: result.engine ?? null,
    dataset: result.dataset ?? null,
    files: result.files ?? {},
    figures: result.figures,
  };
  writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}

/** The last line a command prints: its folder and how to look at it (on stderr under --json, whose stdout is one object). */
export function announceRunFolder(dir: string, json: boolean | undefined): void {
  const line = `run folder: ${dir} (look at it: intercode view ${/^[\w@%+=:,./-]+$/.test(dir) ? dir : `'${dir}'`})\n`;
  if (json) process.stderr.write(line);
  else process.stdout.write(line);
}
