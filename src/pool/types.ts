import type { ShellSession } from '../sandbox/shell/shell-session.js';
import type { CommandRunner } from '../sandbox/shell/types.js';
import type { Sandbox, WarmRole } from '../sandbox/types.js';

/**
 * A sandbox with the env's command runner open in it: what an episode runs in. `control`
 * is a shell of the harness's own in the same sandbox (for scoring and restoring); the
 * agent's actions never go through it.
 */
export interface Workspace {
  readonly sandbox: Sandbox;
  /** The agent's runner; replaced with a fresh one when the workspace is restored in place. */
  runner: CommandRunner;
  /**
   * Set while the runner is a shell that has run nothing since it started (an adopted
   * workspace's, handed over when it was parked): its process id in the sandbox. The
   * in-place restore then keeps that shell instead of starting another.
   */
  unusedRunnerPid?: number;
  readonly control: ShellSession;
  /**
   * An untouched sandbox of the same image, when there is one (a warm pool's template):
   * `sandbox.changes(reference)` then tells cheaply what an episode changed.
   */
  reference?: Sandbox;
  /**
   * Set while the sandbox is as its image made it but for what the current loan did: new,
   * never restored nor reset by the harness. Every path it has written is then its episode's
   * doing (see SandboxFromHost.changes without a reference).
   */
  fromImage?: boolean;
}

/** How an env makes and unmakes its workspaces (the pool calls these; it knows nothing of envs). */
export interface WorkspaceFactory {
  /** The OCI runtime its sandboxes run under (SandboxRuntime.ociRuntime); undefined: the engine's default. */
  readonly ociRuntime?: string;
  /** Its runtime's sandboxes are new by construction and cheap (SandboxRuntime.freshRoots): used ones are replaced. */
  readonly freshRoots?: boolean;
  /** A new sandbox, started, with the runner and the control shell open. @throws SandboxError / ImageError. */
  create(): Promise<Workspace>;
  /** A new agent runner in an existing sandbox (after an in-place restore). */
  openRunner(sandbox: Sandbox): Promise<CommandRunner>;
  /** Closes the runner and removes the sandbox. */
  destroy(workspace: Workspace): Promise<void>;
  /**
   * A workspace on a sandbox an earlier process kept warm in role `role` (see
   * SandboxRuntime.adopt), its control shell open and its runner not ({@link NO_RUNNER}:
   * cleaning it opens one); undefined when there is none or the runtime cannot keep
   * sandboxes warm. Clean it before handing it out.
   */
  adopt?(role: WarmRole): Promise<Workspace | undefined>;
  /**
   * Closes the workspace's shells and keeps its sandbox (clean) warm for `ttlMs` after this
   * process is gone (see SandboxRuntime.park). @returns false when it was not kept: remove it.
   */
  park?(workspace: Workspace, role: WarmRole, ttlMs: number): Promise<boolean>;
}

/** Where an env's episodes get their workspaces. */
export interface WorkspaceSource {
  /** A clean workspace: nothing any earlier episode did is in it. */
  acquire(): Promise<Workspace>;
  /**
   * Optional: a clean workspace only if one is ready now (a warm pool's idle one), without
   * waiting or making one; undefined otherwise.
   */
  acquireIfIdle?(): Promise<Workspace | undefined>;
  /** The episode is over: the workspace is never handed out again as it is (removed, or restored first). */
  release(workspace: Workspace): void;
  /** Waits for background work and removes every workspace the source holds. */
  close(): Promise<void>;
}

/** A workspace an episode holds, and where it goes back when the episode is over. */
export interface HeldWorkspace {
  workspace: Workspace;
  /** The source that lent it; null for one no source owns (made from a checkpoint's layer: removed when retired). */
  returnTo: WorkspaceSource | null;
}

/**
 * The runner of a workspace whose agent runner is not open (an adopted one, until it is
 * cleaned: the in-place restore closes whatever runner there is and opens a new one, so
 * opening one at adoption would start an agent shell only to kill it).
 */
export const NO_RUNNER: CommandRunner = {
  cwd: '/',
  run: () => Promise.reject(new Error('this workspace has no agent runner yet: it is opened when the workspace is cleaned')),
  close: () => undefined,
};
