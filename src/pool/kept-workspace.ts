import { EnvStateError, SandboxError } from '../errors.js';
import type { Workspace, WorkspaceFactory, WorkspaceSource } from './types.js';

/**
 * Puts a kept workspace back into the state a new loan starts from, through its control
 * shell (e.g. InterCode's `git reset --hard; git clean -fd`). Whatever it does not undo
 * carries over to the next loan. @throws SandboxError when the sandbox is lost or cannot be reset.
 */
export type WorkspaceReset = (workspace: Workspace) => Promise<void>;

/**
 * One workspace kept for the source's whole life and lent to one borrower at a time:
 * every `acquire` runs `reset` on it first (also the first time, as InterCode reset its
 * containers before every episode) and gives it a new agent runner; a new workspace
 * first gets `prepare`, once. Unlike the other
 * sources it does NOT promise a clean workspace — only what `reset` restores — which is
 * the point: it reproduces environments whose episodes saw state earlier ones left.
 * A workspace whose sandbox was lost is replaced by a new one (its history is lost with it).
 */
export class KeptWorkspace implements WorkspaceSource {
  private workspace: Workspace | undefined;
  private lent = false;
  /** The runner the workspace was created with: fresh, so the first loan uses it. */
  private runnerFresh = false;

  /**
   * @param prepare runs once on each new workspace, before its first reset (e.g. to make it
   *   look as InterCode's container looked when its run began).
   */
  constructor(
    private readonly factory: WorkspaceFactory,
    private readonly reset: WorkspaceReset,
    private readonly prepare?: WorkspaceReset,
  ) {}

  /** @throws EnvStateError while the workspace is lent; SandboxError when no sandbox can be made or reset. */
  async acquire(): Promise<Workspace> {
    if (this.lent) throw new EnvStateError('KeptWorkspace.acquire() called while its workspace is lent; release it first');
    this.lent = true;
    try {
      const workspace = await this.resetOrReplace();
      // Reset before every loan (prepared too, when new): never as its image made it.
      workspace.fromImage = false;
      if (!this.runnerFresh) workspace.runner = await this.factory.openRunner(workspace.sandbox);
      this.runnerFresh = false;
      return workspace;
    } catch (error) {
      this.lent = false;
      throw error;
    }
  }

  release(workspace: Workspace): void {
    if (workspace !== this.workspace) return;
    workspace.runner.close();
    this.lent = false;
  }

  /** Removes the kept workspace. */
  async close(): Promise<void> {
    const workspace = this.workspace;
    this.workspace = undefined;
    this.lent = false;
    if (workspace) await this.factory.destroy(workspace).catch(() => undefined);
  }

  private async resetOrReplace(): Promise<Workspace> {
    if (this.workspace) {
      try {
        await this.reset(this.workspace);
        return this.workspace;
      } catch (error) {
        if (!(error instanceof SandboxError) || error.code !== 'SANDBOX_LOST') throw error;
        const lost = this.workspace;
        this.workspace = undefined;
        await this.factory.destroy(lost).catch(() => undefined);
      }
    }
    const workspace = await this.factory.create();
    try {
      await this.prepare?.(workspace);
      await this.reset(workspace);
    } catch (error) {
      await this.factory.destroy(workspace).catch(() => undefined);
      throw error;
    }
    this.workspace = workspace;
    this.runnerFresh = true;
    return workspace;
  }
}
