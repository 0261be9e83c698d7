import type { SandboxBackend } from './backend.js';
import { dockerBackend } from './docker-backend.js';
import { kubernetesBackend } from './kubernetes-backend.js';

/**
 * Every backend sandboxes can run on, asked in order whose an `--engine` value is: Docker
 * last, since it takes (or refuses as a Docker endpoint) whatever no other claims. A new
 * backend is one more entry here.
 */
export const SANDBOX_BACKENDS: readonly SandboxBackend[] = [kubernetesBackend, dockerBackend];

/** The backend an `--engine` value or endpoint belongs to: the first of {@link SANDBOX_BACKENDS} that matches it. */
export function backendOf(value: string): SandboxBackend {
  return SANDBOX_BACKENDS.find((backend) => backend.matches(value)) ?? dockerBackend;
}
