import { UnknownEnvError } from '../errors.js';
import type { Env } from './types.js';

/**
 * An environment registered as data under a versioned id (`intercode/bash-v1`). Reading a
 * spec starts nothing; `create` builds images and connects to the engine as needed.
 */
export interface EnvSpec<Options = Record<string, unknown>> {
  id: string;
  description: string;
  create(options?: Partial<Options>): Promise<Env>;
}

const specs = new Map<string, EnvSpec<never>>();

export function registerEnv<Options>(spec: EnvSpec<Options>): void {
  specs.set(spec.id, spec as EnvSpec<never>);
}

/** Ids of every registered environment, sorted. */
export function registeredEnvIds(): string[] {
  return [...specs.keys()].sort();
}

/** @throws UnknownEnvError listing the registered ids. */
export function envSpec(id: string): EnvSpec<never> {
  const spec = specs.get(id);
  if (!spec) throw new UnknownEnvError(id, registeredEnvIds());
  return spec;
}

/** Creates the environment registered under `id`. @throws UnknownEnvError */
export function make<Options>(id: string, options?: Partial<Options>): Promise<Env> {
  return (envSpec(id) as EnvSpec<Options>).create(options);
}
