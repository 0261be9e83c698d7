import { oneOf, SandboxError } from '../../src/errors.js';
import type { Workspace } from '../../src/pool/types.js';
import { shellQuote } from '../../src/sandbox/shell/shell-script.js';
import type { TestbedTree } from './images.js';

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
  return oneOf(option, value, RESET_MODES);
}

/**
 * InterCode's reset script (`envs/bash/bash_env.py`), run at `/` before every episode in
 * the agent's container and before every gold run in the evaluation container.
 */
export const INTERCODE_RESET_SCRIPT = 'git reset --hard; git clean -fd;';

/**
 * InterCode built its image (its setup script writing the testbed) minutes before each
 * recorded run, so during the run the testbed was minutes old: `find -mmin -60`, `-cmin -60`
 * and `-amin -60` listed it. Ours carries the times of the tarball, or of an image built long
 * ago. This script, run once in each new `intercode` sandbox with the testbed's newest time
 * and its top-level entries as arguments, writes the testbed anew as that build did: each
 * top-level folder is copied (`cp -a`, holes filled) and put in place of the original, so
 * its folders are new ones, as git's and InterCode's were (a folder the sandbox's overlay
 * copies up to change its times grows an extended-attribute block, which `du` counts); then
 * what was written with the tree (modified within an hour of its newest time) moves forward
 * by one offset, so the newest is a second old and the spacing is kept, and what was dated
 * on purpose (e.g. 2023-05-31, by `touch -m`) keeps its modification time and gets the
 * build's access time; every change time is the present. Git's index is then refreshed.
 */
export const INTERCODE_FRESH_TESTBED_SCRIPT = String.raw`newest=$1; shift
cd / || exit 1
offset=$(( $(date +%s) - 1 - newest ))
for root in "$@"; do
  [ -d "$root" ] && [ ! -L "$root" ] || continue
  cp -a --sparse=never -- "$root" "$root.intercode-ts-new" && rm -rf -- "$root" && mv -- "$root.intercode-ts-new" "$root" || exit 1
done
find "$@" -printf '%Ts %p\0' |
  while IFS= read -r -d '' entry; do
    modified=${'${entry%% *}'} path=${'${entry#* }'}
    if (( modified >= newest - 3600 )); then touch -h -d "@$(( modified + offset ))" -- "$path"
    else touch -h -a -d "@$(( newest + offset ))" -- "$path"; fi || exit 1
  done || exit 1
git update-index -q --refresh >/dev/null
exit 0`;

/**
 * A workspace preparation that runs {@link INTERCODE_FRESH_TESTBED_SCRIPT} for `tree` through
 * the workspace's control shell. @throws SandboxError SANDBOX_UNAVAILABLE when it fails.
 */
export function intercodeFreshTestbed(tree: TestbedTree): (workspace: Workspace) => Promise<void> {
  const command = ['bash', '-c', INTERCODE_FRESH_TESTBED_SCRIPT, 'bash', String(tree.newest), ...tree.roots.map((root) => `/${root}`)].map(shellQuote).join(' ');
  return async (workspace) => {
    const result = await workspace.control.run(command);
    if (result.exitCode !== 0) {
      throw new SandboxError('SANDBOX_UNAVAILABLE', `dating the testbed as freshly written failed in ${workspace.sandbox.id}: ${result.output.slice(0, 500)}`, {
        details: { sandbox: workspace.sandbox.id, exitCode: result.exitCode, output: result.output.slice(0, 2000) },
      });
    }
  };
}

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
