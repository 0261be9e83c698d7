/**
 * Why a part of a sandbox's state was not carried to another (a checkpoint's layer or shell
 * state): `reason` names what could not be carried exactly, `details` says more. Nothing
 * partial is kept.
 */
export class CarryRefusal<Reason extends string = string> extends Error {
  constructor(
    readonly reason: Reason,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Why a sandbox's writable layer was not archived (see WrittenLayer.archive): it holds what
 * cannot be carried (a socket), or more than the limits allow.
 */
export class LayerArchiveRefusal extends CarryRefusal<'socket' | 'too-large' | 'too-many-paths' | 'timed-out'> {}

/**
 * Why a sandbox's state outside its writable layer (/dev, /dev/shm, the mount points, IPC
 * objects: see outside-layer.ts) was not carried: the episode changed it, or it could not be read.
 */
export class OutsideLayerRefusal extends CarryRefusal<'not-carried' | 'unreadable'> {}
