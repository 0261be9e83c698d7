/**
 * `jobs` in the order that ends a batch soonest when each goes to the next free env (the
 * longest-processing-time rule): a long job started last runs alone while the other envs
 * sit idle. Jobs of unknown duration come first, in their order (a gold never verified runs
 * three times: likely the longest); then the others, longest first, ties in their order.
 */
export function longestFirst<T>(jobs: readonly T[], durationOf: (job: T) => number | undefined): T[] {
  const keyed = jobs.map((job, position) => ({ job, position, duration: durationOf(job) }));
  keyed.sort((a, b) => {
    if (a.duration === undefined || b.duration === undefined) {
      return a.duration === b.duration ? a.position - b.position : a.duration === undefined ? -1 : 1;
    }
    return b.duration - a.duration || a.position - b.position;
  });
  return keyed.map(({ job }) => job);
}
