/** Rollouts as a service: `POST /rollouts` plays K episodes of given tasks against a trainer's model server and streams the records. */
export { ROLLOUTS_PATH_ITEM, RolloutService, type RolloutCounts, type RolloutServiceOptions } from './rollout-service.js';
export { MAX_EPISODES_PER_REQUEST, parseRolloutRequest, ROLLOUT_REQUEST_DEFAULTS, type RolloutRequest, type RolloutStreamUnit } from './rollout-request.js';
export { CancellableEnv } from './cancellable-env.js';
