import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SetupError } from '../../errors.js';
import { commandExists } from '../host-facts.js';
import type { SetupStep, StepContext, StepOutcome } from '../step.js';

/** A Docker runtime entry of daemon.json. */
export interface RuntimeEntry {
  path: string;
  runtimeArgs?: readonly string[];
}

/**
 * gVisor's flags for this engine: Docker's `--network none` still hands runsc a network
 * namespace to set up, and runsc refuses it ("cannot run with network enabled in root network
 * namespace") unless its own networking is off. Sandboxes get no network either way.
 */
export const RUNSC_ARGS: readonly string[] = ['--network=none'];

/**
 * daemon.json text with `runtimes.<name>` registered as `entry`; every other key kept as it
 * was. A runtime registered already keeps its path and arguments and gains the arguments of
 * `entry` it lacks. Returns undefined when nothing needs to change.
 * @throws SetupError when `existing` is not a JSON object, or holds a `runtimes.<name>` that is
 * not a runtime (no string `path`, or `runtimeArgs` not a list of strings).
 */
export function mergeRuntime(existing: string | undefined, name: string, entry: RuntimeEntry, file = 'daemon.json'): string | undefined {
  let config: Record<string, unknown> = {};
  if (existing !== undefined && existing.trim() !== '') {
    try {
      config = JSON.parse(existing) as Record<string, unknown>;
    } catch (error) {
      throw new SetupError('runsc-runtime', `${file} is not valid JSON (${(error as Error).message}); fix it, then run setup again`, [], error);
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new SetupError('runsc-runtime', `${file} does not hold a JSON object`);
  }
  const runtimes = (config.runtimes ?? {}) as Record<string, unknown>;
  if (typeof runtimes !== 'object' || Array.isArray(runtimes)) throw new SetupError('runsc-runtime', `${file}: "runtimes" is not an object`);
  const present = runtimes[name] as { path?: unknown; runtimeArgs?: unknown } | undefined;
  if (present !== undefined && (present === null || typeof present !== 'object' || Array.isArray(present) || typeof present.path !== 'string')) {
    throw new SetupError('runsc-runtime', `${file}: "runtimes.${name}" is not a runtime (an object with a "path"); fix it, then run setup again`);
  }
  if (present?.runtimeArgs !== undefined && !(Array.isArray(present.runtimeArgs) && present.runtimeArgs.every((a) => typeof a === 'string'))) {
    throw new SetupError('runsc-runtime', `${file}: "runtimes.${name}.runtimeArgs" is not a list of strings; fix it, then run setup again`);
  }
  const presentArgs = (present?.runtimeArgs as string[] | undefined) ?? [];
  const missingArgs = (entry.runtimeArgs ?? []).filter((arg) => !presentArgs.includes(arg));
  if (present && missingArgs.length === 0) return undefined;
  const runtime = present ? { ...present, runtimeArgs: [...presentArgs, ...missingArgs] } : { path: entry.path, ...(entry.runtimeArgs?.length ? { runtimeArgs: [...entry.runtimeArgs] } : {}) };
  return `${JSON.stringify({ ...config, runtimes: { ...runtimes, [name]: runtime } }, null, 2)}\n`;
}

/** Registers gVisor's runsc as a Docker runtime in the layout's daemon.json (before the engine starts). */
export const runscRuntimeStep: SetupStep = {
  id: 'runsc-runtime',
  title: 'register gVisor (runsc) as a Docker runtime',
  async run({ layout, log }: StepContext): Promise<StepOutcome> {
    const path = ['/usr/bin/runsc', '/usr/local/bin/runsc', '/usr/sbin/runsc'].find((p) => existsSync(p));
    if (!path) {
      if (!commandExists('runsc')) return { status: 'skipped', detail: 'no runsc binary (install the runsc package to get the gVisor runtime)' };
    }
    const file = layout.configFile;
    const merged = mergeRuntime(existsSync(file) ? readFileSync(file, 'utf8') : undefined, 'runsc', { path: path ?? 'runsc', runtimeArgs: RUNSC_ARGS }, file);
    if (merged === undefined) return { status: 'skipped', detail: `${file} already names runsc with ${RUNSC_ARGS.join(' ')}` };
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(`${file}.intercode-tmp`, merged);
    renameSync(`${file}.intercode-tmp`, file);
    log(`registered runtimes.runsc (${RUNSC_ARGS.join(' ')}) in ${file}`);
    return { status: 'done', detail: `runsc registered in ${file}` };
  },
};
