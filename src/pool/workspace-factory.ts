import { ShellSession } from '../sandbox/shell/shell-session.js';
import type { CommandRunner } from '../sandbox/shell/types.js';
import type { Sandbox, SandboxRuntime, SandboxSpec, WarmRole } from '../sandbox/types.js';
import { PINNED_PIDS, startAtPid } from './reuse/process-ids.js';
import { NO_RUNNER, type Workspace, type WorkspaceFactory } from './types.js';

/** The harness's own shell in each sandbox: long time limit, large outputs (git status, md5 lists, restores). */
export const CONTROL_SHELL = { harness: true, timeoutMs: 30_000, maxOutputBytes: 4 * 1024 * 1024, killOutputBytes: 8 * 1024 * 1024 };

/** How an env starts the agent's runner in a sandbox, and takes over one an earlier process handed over. */
export interface RunnerStarter {
  open(sandbox: Sandbox): Promise<CommandRunner>;
  /** The agent's shell handed over in an adopted sandbox, when the env's runner is such a shell; else undefined. */
  resume(sandbox: Sandbox): Promise<ShellSession | undefined>;
}

/**
 * How an env's workspaces are made: a sandbox of `spec` from `runtime`, with the harness's
 * control shell and the agent's runner open. A new sandbox's shells, and its episode's first
 * process, get the pinned process ids (see reuse/process-ids.ts). Where the runtime parks sandboxes,
 * parked ones are adopted with their shells.
 */
export function sandboxWorkspaces(runtime: SandboxRuntime, spec: SandboxSpec, runners: RunnerStarter): WorkspaceFactory {
  /**
   * A workspace on `sandbox`: its control shell and its runner. An adopted sandbox's shells
   * were handed over when it was parked: taken over where they answer (no new process);
   * else a new control shell, and no runner (the restore that cleans it before use opens one).
   */
  const open = async (sandbox: Sandbox, adopted = false): Promise<Workspace> => {
    try {
      const resumed = adopted ? await ShellSession.resume(sandbox, 'control', CONTROL_SHELL) : undefined;
      const control = resumed ?? await startAtPid(sandbox, PINNED_PIDS.control, () => ShellSession.open(sandbox, CONTROL_SHELL));
      // Later shells start through the control shell: no engine exec per reset.
      sandbox.launchThrough?.(control);
      if (!adopted) {
        const runner = await startAtPid(sandbox, PINNED_PIDS.agent, () => runners.open(sandbox));
        await sandbox.fromHost?.setNextPid(PINNED_PIDS.episode);
        return { sandbox, control, runner, fromImage: true };
      }
      const runner = await runners.resume(sandbox);
      return { sandbox, control, ...(runner ? { runner, unusedRunnerPid: runner.pid } : { runner: NO_RUNNER }) };
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw error;
    }
  };
  return {
    ...(runtime.ociRuntime !== undefined ? { ociRuntime: runtime.ociRuntime } : {}),
    ...(runtime.freshRoots ? { freshRoots: true } : {}),
    create: async () => open(await runtime.create(spec)),
    openRunner: (sandbox) => runners.open(sandbox),
    destroy: async ({ sandbox, runner, control }) => {
      runner.close();
      control.close();
      await sandbox.destroy();
    },
    ...(runtime.adopt && runtime.park
      ? {
          adopt: async (role: WarmRole) => {
            const sandbox = await runtime.adopt!(spec, role);
            return sandbox ? open(sandbox, true) : undefined;
          },
          // A parked workspace is a clean idle one: its runner has run nothing since its restore.
          park: async ({ sandbox, runner, control }: Workspace, role: WarmRole, ttlMs: number) => {
            if (runner instanceof ShellSession) await runner.handOver('agent');
            else runner.close();
            await control.handOver('control');
            return runtime.park!(sandbox, role, ttlMs);
          },
        }
      : {}),
  };
}
