import type { Workspace, WorkspaceFactory, WorkspaceSource } from './types.js';

/** A new workspace for every acquire; released ones are removed in the background. */
export class FreshWorkspaces implements WorkspaceSource {
  private readonly removals = new Set<Promise<void>>();

  constructor(private readonly factory: WorkspaceFactory) {}

  acquire(): Promise<Workspace> {
    return this.factory.create();
  }

  release(workspace: Workspace): void {
    const removal = this.factory
      .destroy(workspace)
      .catch(() => undefined)
      .finally(() => this.removals.delete(removal));
    this.removals.add(removal);
  }

  async close(): Promise<void> {
    await Promise.all(this.removals);
  }
}
