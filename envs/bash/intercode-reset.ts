import { ConfigError, SandboxError } from '../../src/errors.js';
import type { Workspace } from '../../src/pool/types.js';

/**
 * How a bash episode starts. `exact`: a sandbox exactly as the image made it, every
 * change of earlier episodes undone wherever it was (the default). `intercode`: InterCode's
 * lifecycle, to reproduce its recordings — each env keeps one agent sandbox and one gold
 * sandbox for the whole run and resets them with `git reset --hard; git clean -fd` at `/`,
 * so what git ignores (`/root`, `/etc`, `/usr`, `/var`, …) keeps what earlier episodes
 * wrote, and what git cannot track (empty folders, `/tmp`) is gone after the first reset.
 */
export type ResetMode = 'exact' | 'intercode';
export const RESET_MODES: readonly ResetMode[] = ['exact', 'intercode'];

/** Checks a `--reset` value. @throws ConfigError naming the flag and the known modes. */
export function parseResetMode(value: string, option = '--reset'): ResetMode {
  if (!(RESET_MODES as readonly string[]).includes(value)) throw new ConfigError(option, `must be one of ${RESET_MODES.join(', ')}, got "${value}"`);
  return value as ResetMode;
}

/**
 * InterCode's reset script (`envs/bash/bash_env.py`), run at `/` before every episode in
 * the agent's container and before every gold run in the evaluation container.
 */
export const INTERCODE_RESET_SCRIPT = 'git reset --hard; git clean -fd;';

/**
 * Resets a workspace as InterCode did, through its control shell (the agent's runner never
 * sees it). @throws SandboxError SANDBOX_UNAVAILABLE when the script fails (InterCode raised
 * too), SANDBOX_LOST when the sandbox is gone.
 */
export async function intercodeReset(workspace: Workspace): Promise<void> {
  const result = await workspace.control.run(`cd / && { ${INTERCODE_RESET_SCRIPT} }`);
  if (result.exitCode !== 0) {
    throw new SandboxError('SANDBOX_UNAVAILABLE', `InterCode's reset (${INTERCODE_RESET_SCRIPT}) failed in ${workspace.sandbox.id}: ${result.output.slice(0, 500)}`, {
      details: { sandbox: workspace.sandbox.id, exitCode: result.exitCode, output: result.output.slice(0, 2000) },
    });
  }
}
