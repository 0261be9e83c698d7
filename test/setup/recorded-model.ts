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

