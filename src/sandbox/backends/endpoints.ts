import { ConfigError } from '../../errors.js';
import type { EngineTarget } from './backend.js';
import { backendOf } from './backends.js';

/**
 * Parses one `--engine` value by the backend whose form it has: `<endpoint>[=<weight>]` for a
 * Docker engine (weight 1 when left out), e.g. `unix:///run/docker-b.sock=2`, or
 * `k8s[:CONTEXT[/NAMESPACE]]` for a Kubernetes cluster.
 * @throws ConfigError naming `flag` when the value is malformed.
 */
export function parseEngineTarget(value: string, flag = '--engine'): EngineTarget {
  return backendOf(value).parseTarget(value, flag);
}

/**
 * Parses every `--engine` value given. None: the default engine (`fallback`, weight 1).
 * @throws ConfigError for a bad value, an endpoint given twice, or a target of a backend
 *   that cannot share a run (a cluster) given with others.
 */
export function parseEngineTargets(values: readonly string[], fallback: string, flag = '--engine'): EngineTarget[] {
  if (values.length === 0) return [{ endpoint: fallback, weight: 1 }];
  const targets = values.map((v) => parseEngineTarget(v, flag));
  const alone = targets.length > 1 ? targets.find((t) => !backendOf(t.endpoint).combinable) : undefined;
  if (alone) throw new ConfigError(flag, `${alone.endpoint} cannot be combined with other engines: its ${backendOf(alone.endpoint).name} backend places the sandboxes itself`);
  const seen = new Set<string>();
  for (const { endpoint } of targets) {
    if (seen.has(endpoint)) throw new ConfigError(flag, `names ${endpoint} twice`);
    seen.add(endpoint);
  }
  return targets;
}
