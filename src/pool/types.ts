import type { CommandRunner } from '../sandbox/shell/types.js';
import type { Sandbox } from '../sandbox/types.js';

/** A sandbox with the env's command runner open in it: what an episode runs in. */
export interface Workspace {
  readonly sandbox: Sandbox;
  readonly runner: CommandRunner;
}

/** How an env makes and unmakes its workspaces (the pool calls these; it knows nothing of envs). */
export interface WorkspaceFactory {
  /** A new sandbox, started, with the runner open. @throws SandboxError / ImageError. */
  create(): Promise<Workspace>;
  /** Closes the runner and removes the sandbox. */
  destroy(workspace: Workspace): Promise<void>;
}

/** Where an env's episodes get their workspaces. */
export interface WorkspaceSource {
  /** A clean workspace: nothing any earlier episode did is in it. */
  acquire(): Promise<Workspace>;
  /** The episode is over: the workspace is never handed out again as it is (removed, or restored first). */
  release(workspace: Workspace): void;
  /** Waits for background work and removes every workspace the source holds. */
  close(): Promise<void>;
}
