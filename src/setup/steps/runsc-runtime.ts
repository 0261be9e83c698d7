import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SetupError } from '../../errors.js';
import { commandExists } from '../host-facts.js';
import type { SetupStep, StepContext, StepOutcome } from '../step.js';

/**
 * daemon.json text with `runtimes.<name>.path = path` added; every other key kept as it
 * was. Returns undefined when the runtime is registered already (with any path).
 * @throws SetupError when `existing` is not a JSON object.
 */
export function mergeRuntime(existing: string | undefined, name: string, path: string, file = 'daemon.json'): string | undefined {
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
  if (name in runtimes) return undefined;
  return `${JSON.stringify({ ...config, runtimes: { ...runtimes, [name]: { path } } }, null, 2)}\n`;
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
    const merged = mergeRuntime(existsSync(file) ? readFileSync(file, 'utf8') : undefined, 'runsc', path ?? 'runsc', file);
    if (merged === undefined) return { status: 'skipped', detail: `${file} already names runsc` };
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(`${file}.intercode-tmp`, merged);
    renameSync(`${file}.intercode-tmp`, file);
    log(`added runtimes.runsc to ${file}`);
    return { status: 'done', detail: `runsc registered in ${file}` };
  },
};
