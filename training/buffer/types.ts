/** One step of an episode, self-contained: everything a learner needs to featurise the state it was taken in. */
export interface Transition {
  /** The episode's id, shared by its transitions. */
  episode: string;
  /** 0-based position of the action in its episode. */
  step: number;
  env: string;
  taskId: string;
  query: string;
  /** What the agent saw before acting: the query at step 0, else the previous action's output. */
  observation: string;
  /** The action before this one ('' at step 0). */
  previousAction: string;
  action: string;
  reward: number;
  nextObservation: string;
  terminated: boolean;
  truncated: boolean;
  /** Whatever the env or collector adds: exit code, reward parts, the policy's name… (msgpack-able values). */
  info: Record<string, unknown>;
}

/** A whole episode: its transitions in order. */
export interface Episode {
  id: string;
  env: string;
  taskId: string;
  query: string;
  transitions: Transition[];
  /** The last transition's reward (the submit's, for InterCode envs). */
  reward: number;
}

/** Groups consecutive transitions of the same episode; an episode is complete when its last transition ended it and no step is missing. */
export function assembleEpisodes(transitions: Iterable<Transition>): Episode[] {
  const byId = new Map<string, Transition[]>();
  for (const t of transitions) {
    const list = byId.get(t.episode);
    if (list) list.push(t);
    else byId.set(t.episode, [t]);
  }
  const episodes: Episode[] = [];
  for (const [id, list] of byId) {
    const last = list.at(-1)!;
    const complete = list.every((t, i) => t.step === i) && (last.terminated || last.truncated);
    if (!complete) continue;
    episodes.push({ id, env: last.env, taskId: last.taskId, query: last.query, transitions: list, reward: last.reward });
  }
  return episodes;
}
