import type { TaskEnv } from '../env/types.js';

/**
 * Where a server's sessions get their envs — the one seam between the server and however
 * sandboxes are made (today the warm pool, see {@link pooledEnvSlots}; later the episode
 * engine or a Kubernetes backend). One env per session; `capacity` envs at most.
 */
export interface EnvSlots {
  /** The env's name (`bash`, `sql`…), as `state` and `/metadata` report it. */
  readonly envName: string;
  /** How many envs can be lent at once. */
  readonly capacity: number;
  /** Envs lent now. */
  readonly inUse: number;
  /** An env for a new session, or undefined when all `capacity` are lent. */
  take(): TaskEnv | undefined;
  /**
   * The session is over: its episode ends and its sandbox goes back (restored in place, or
   * removed) at once; the slot is free again when this resolves. Never throws.
   */
  give(env: TaskEnv): Promise<void>;
  /** Sandboxes alive now (in use and spare), for `/health` and tests; undefined when the source cannot tell. */
  sandboxes(): number | undefined;
  /** The warm pool's sandboxes by state, and how many it made and lost, for `/metrics`; undefined when the source keeps no pool. */
  poolCounts(): SandboxPoolCounts | undefined;
  /** The most sandboxes that can exist at once (in use, spare, and any the source keeps for itself); undefined: no fixed bound. */
  readonly sandboxLimit: number | undefined;
  /** Resolves once the source's spare sandboxes are warm (at once when it keeps none). @throws the source's failure (an image or engine error). */
  ready(): Promise<void>;
  /** Removes every sandbox and closes every env. */
  close(): Promise<void>;
}

/** A sandbox pool's state, as `/metrics` reports it. */
export interface SandboxPoolCounts {
  /** Ready to hand out. */
  warm: number;
  /** Handed out to an episode. */
  inUse: number;
  /** Given back and being restored in place (or removed). */
  restoring: number;
  /** Being created. */
  creating: number;
  /** Made since the server started. */
  created: number;
  /** Found dead or dirty when about to be handed out, and replaced. */
  lostOnBorrow: number;
}
