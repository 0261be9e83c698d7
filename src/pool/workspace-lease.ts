import type { HeldWorkspace, Workspace, WorkspaceSource } from './types.js';

/**
 * Where an env's episodes get their workspaces (new ones, or a shared pool's), and the one
 * its episode holds now: taken from the current source, and handed back to the source that
 * lent it, which removes or restores it off the hot path (one no source owns is removed).
 */
export class WorkspaceLease {
  private current: HeldWorkspace | undefined;
  private owned = true;

  constructor(private from: WorkspaceSource) {}

  /** Where the next episode's workspace comes from. */
  get source(): WorkspaceSource {
    return this.from;
  }

  /** Whether closing the lease closes its source (a source given with `own: false` is the caller's). */
  get ownsSource(): boolean {
    return this.owned;
  }

  /** The workspace held now, with where it goes back. */
  get held(): HeldWorkspace | undefined {
    return this.current;
  }

  /** Hands back the workspace held, then holds a new one from the source. */
  async take(): Promise<Workspace> {
    this.retire();
    const source = this.from;
    const workspace = await source.acquire();
    this.current = { workspace, returnTo: source };
    return workspace;
  }

  /** Hands back the workspace held, then holds `held` (a restored episode's). */
  hold(held: HeldWorkspace): void {
    this.retire();
    this.current = held;
  }

  /** Takes workspaces from `source` from the next {@link take} on; `own`: close it with the lease. */
  use(source: WorkspaceSource, own: boolean): void {
    this.retire();
    if (this.owned) void this.from.close();
    this.from = source;
    this.owned = own;
  }

  /** Hands the workspace held back (removed if no source owns it). */
  retire(): void {
    const held = this.current;
    this.current = undefined;
    if (!held) return;
    const { workspace, returnTo } = held;
    if (returnTo) return returnTo.release(workspace);
    workspace.runner.close();
    workspace.control.close();
    void workspace.sandbox.destroy().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.retire();
    if (this.owned) await this.from.close();
  }
}
