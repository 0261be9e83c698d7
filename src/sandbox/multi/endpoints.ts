import { ConfigError } from '../../errors.js';
import { isClusterTarget, parseClusterTarget } from '../kubernetes/cluster.js';
import type { EngineEndpoint } from '../docker/engine.js';

/** One Docker engine of a {@link MultiEngineRuntime}: where it is and how much it takes. */
export interface EngineTarget {
  /** `unix:///path`, `/path` (a socket), `tcp://host:port`, `http(s)://host:port`. */
  endpoint: EngineEndpoint;
  /** Share of the sandboxes it gets relative to the others (2 = twice as many as a 1). */
  weight: number;
}

const ENDPOINT_FORMS = /^(unix:\/\/\/|\/|tcp:\/\/|https?:\/\/)/;

/**
 * Parses one `--engine` value, `<endpoint>[=<weight>]` (weight 1 when left out), e.g.
 * `unix:///run/docker-b.sock=2`.
 * @throws ConfigError naming `flag` when the endpoint has no known form or the weight is not a positive number.
 */
export function parseEngineTarget(value: string, flag = '--engine'): EngineTarget {
  // A Kubernetes cluster: `k8s`, `k8s:CONTEXT`, `k8s:CONTEXT/NAMESPACE` (no weight: the cluster schedules).
  if (isClusterTarget(value)) return parseClusterTarget(value, flag) && { endpoint: value, weight: 1 };
  const match = /^(.*)=([^=]*)$/.exec(value);
  const endpoint = match ? match[1]! : value;
  const weightText = match ? match[2]! : '1';
  const weight = Number(weightText);
  if (!ENDPOINT_FORMS.test(endpoint)) {
    throw new ConfigError(flag, `must be unix:///path, /path, tcp://host:port or http(s)://host:port, optionally =weight; got "${value}"`);
  }
  if (endpoint.startsWith('tcp:') || endpoint.startsWith('http')) {
    try {
      new URL(endpoint.replace(/^tcp:/, 'http:'));
    } catch {
      throw new ConfigError(flag, `has an endpoint that is not a URL: "${endpoint}"`);
    }
  }
  if (weightText.trim() === '' || !Number.isFinite(weight) || weight <= 0) {
    throw new ConfigError(flag, `weight must be a positive number, got "${weightText}" in "${value}"`);
  }
  return { endpoint, weight };
}

/**
 * Parses every `--engine` value given. None: the default engine (`fallback`, weight 1).
 * @throws ConfigError for a bad value or an endpoint given twice.
 */
export function parseEngineTargets(values: readonly string[], fallback: EngineEndpoint, flag = '--engine'): EngineTarget[] {
  if (values.length === 0) return [{ endpoint: fallback, weight: 1 }];
  const targets = values.map((v) => parseEngineTarget(v, flag));
  if (targets.length > 1 && targets.some((t) => isClusterTarget(t.endpoint))) {
    throw new ConfigError(flag, 'k8s… cannot be combined with other engines: the cluster places the pods');
  }
  const seen = new Set<string>();
  for (const { endpoint } of targets) {
    if (seen.has(endpoint)) throw new ConfigError(flag, `names ${endpoint} twice`);
    seen.add(endpoint);
  }
  return targets;
}
