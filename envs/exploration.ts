/** What the envs' exploration rules (EnvPlugin.training) share: reading names off an observation. */

/** An absolute path, as `ls`, `find` or an error message prints it. */
export const PATH = /\/(?:[\w.-]+\/)*[\w.-]+/g;
/** Actions derived from one observation, at most. */
export const MAX_DERIVED = 4;

/** The first `limit` distinct items, in order. */
export const firstDistinct = (items: Iterable<string>, limit: number) => [...new Set(items)].slice(0, limit);
