/**
 * One episode of an InterCode bash log, as a recorded model replays it (src/mock-llm): the
 * actions its model answered with, in order; observations and rewards left empty (the
 * model reads only the actions).
 */
export const recordedBashEpisode = (query: string, actions: string[]) => ({
  environment: 'ic_bash',
  query,
  turn_history: { actions, observations: actions.map(() => ''), rewards: actions.map(() => 0), valid_action: actions.map(() => true) },
  summary: { max_reward: 0 },
});

/** A recorded ReAct episode (`recordedBashEpisode` with a thought before each action). */
export const recordedReactEpisode = (query: string, actions: string[]) => {
  const episode = recordedBashEpisode(query, actions);
  return { ...episode, turn_history: { ...episode.turn_history, thoughts: actions.map(() => 'next') } };
};
