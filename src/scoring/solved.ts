/**
 * The one rule for "this episode solved its task", used by every command and report
 * (eval, run, collect, train, the server's metrics): InterCode's success, `reward == 1`,
 * with 1e-6 of room for a 1 computed as a float sum of rounded parts.
 *
 * Not 0.995 (what `run`, `collect` and `train` used before): rewards below 1 are partial
 * credit, not near-solutions: a SQL reward is the IoU of the result rows, so 199 right rows
 * of 200 score 0.995 and would have counted as solved; a policy trained on that count
 * learns to stop one row short. Bash rewards move in steps of 0.01, so both thresholds agree there.
 */
export const SOLVED_REWARD = 1 - 1e-6;

/** Whether `reward` counts as solving the task (see {@link SOLVED_REWARD}). */
export const isSolved = (reward: number): boolean => reward >= SOLVED_REWARD;
