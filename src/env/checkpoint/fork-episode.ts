import { ConfigError } from '../../errors.js';
import type { EpisodeCheckpoint } from './handles.js';

/** What {@link forkEpisode} needs of the env it forks: its checkpoint API. */
interface Forking<State> {
  checkpoint(): Promise<EpisodeCheckpoint<State>>;
  releaseCheckpoint(checkpoint: EpisodeCheckpoint<State>): void;
}

/** What {@link forkEpisode} needs of a child: that it restores a checkpoint and closes. */
interface ForkChild<State> {
  restore(checkpoint: EpisodeCheckpoint<State>): Promise<void>;
  close(): Promise<void>;
}

/**
 * `n` independent episodes continuing `env`'s from now: one checkpoint, restored into `n`
 * children `makeChild` gives, then released (the env's episode goes on unchanged). All or
 * none: when one child cannot be made or restored, those made are closed and the error thrown.
 * @throws ConfigError for an `n` that is not a positive integer; what checkpoint, makeChild and restore throw.
 */
export async function forkEpisode<State, Child extends ForkChild<State>>(
  env: Forking<State>,
  n: number,
  makeChild: () => Child,
): Promise<Child[]> {
  if (!Number.isInteger(n) || n < 1) throw new ConfigError('fork(n)', 'n must be a positive integer');
  const checkpoint = await env.checkpoint();
  const children: Child[] = [];
  try {
    for (let i = 0; i < n; i++) children.push(makeChild());
    await Promise.all(children.map((child) => child.restore(checkpoint)));
    return children;
  } catch (error) {
    await Promise.all(children.map((child) => child.close().catch(() => undefined)));
    throw error;
  } finally {
    env.releaseCheckpoint(checkpoint);
  }
}
