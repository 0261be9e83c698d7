/**
 * Why a sandbox's writable layer was not archived (see Sandbox.archiveLayer): it holds what
 * cannot be carried (a socket), or more than the limits allow. Nothing partial is kept.
 */
export class LayerArchiveRefusal extends Error {
  constructor(
    readonly reason: 'socket' | 'too-large' | 'too-many-paths' | 'timed-out',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}
