/**
 * A rollout record: one LLM episode as a trainer needs it — the env's view (actions,
 * observations, per-step rewards, the episode's reward, terminated/truncated), the whole
 * dialogue in the chat API's message shape with the tools offered, the server's tokens,
 * and the sample's seed, temperature and group. Its fields include every field of a
 * demonstration line (training/demos), so `--policy replay:FILE` and behaviour cloning read it.
 */

import { wireMessages, wireTools, type AgentRecord, type EpisodeUsage, type Strategy } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import type { EvalEpisodeLog } from '../eval/index.js';
import { isSolved } from '../scoring/solved.js';
import { tokenRecord, type TokenRecord } from './token-record.js';

export const ROLLOUT_FORMAT = 'intercode-rollout-v1';

/** A message as the chat API (and Hugging Face's conversational format) writes it. */
export interface WireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface SampleInfo {
  /** 0-based sample of its task (0..K-1). */
  index: number;
  /** The seed sent with every model request of the episode. */
  seed: number;
  temperature: number;
}

export interface GroupInfo {
  /** The task's id: the samples of one task form a group. */
  id: string;
  size: number;
  /** Every sample's reward, by sample index. */
  rewards: number[];
  mean: number;
  std: number;
  /** This sample's advantage: reward − mean (÷ (std + 1e-6) when `scaled`). */
  advantage: number;
  scaled: boolean;
}

/**
 * The policy version an episode was played at: `requested` is what the trainer said it was
 * at when it asked (null outside the rollout service); `start` and `end` are the versions of
 * the episode's first and last model replies where the inference server stamps one, else
 * `requested`. A trainer that updates weights mid-run sees `start !== end` and can weight
 * or drop the episode (off-policy steps).
 */
export interface PolicyVersion {
  requested: string | number | null;
  start: string | number | null;
  end: string | number | null;
}

export interface RolloutRecord {
  format: typeof ROLLOUT_FORMAT;
  /** Unique per episode: `<run stamp>-<task id>-<sample>`. */
  session_id: string;
  env: string;
  task_id: string;
  task_index: number;
  query: string;
  actions: string[];
  observations: string[];
  rewards: number[];
  valid_action: boolean[];
  /** Whether each action was sent to the env (false: a reply without an action; its `actions` entry is the reply). */
  executed: boolean[];
  /** The episode's reward: the best step reward under every-step scoring, the submit's under on-submit (InterCode's `max_reward`). */
  reward: number;
  /** The named parts of `reward` (the parts of the turn it came from; {} when no turn was scored): bash file_diff, file_changes, answer_similarity; SQL iou (and kendall_tau where order counts); Python passed, tests; CTF flag. */
  reward_components: Record<string, number>;
  /** Each turn's reward parts, beside `rewards`; null where the turn was not scored. */
  step_components: (Record<string, number> | null)[];
  /** The model ended the episode: it submitted, or (Try Again, tools) a step scored 1. */
  terminated: boolean;
  /** Cut off: the turn limit, or the sandbox was lost (`truncation` says which). */
  truncated: boolean;
  truncation: string | null;
  /** Cut off before any turn was scored (the verifier gave no reward, the sandbox was lost…): `reward` 0 is no score. null: scored. */
  not_scored: { reason: string; message: string } | null;
  policy: string;
  strategy: string;
  model: string;
  sample: SampleInfo;
  group: GroupInfo | null;
  policy_version: PolicyVersion;
  messages: WireMessage[];
  /** The function tools offered, in the chat API's `tools` shape ([] for text strategies). */
  tools: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  /** For each turn (action or invalid reply) the index in `messages` of the reply it came from; turns past its length are the runner's (ReAct's submit at the turn limit). */
  turn_messages: number[];
  tokens: TokenRecord;
  usage: EpisodeUsage;
}

export interface RecordInput {
  envName: string;
  task: Task;
  log: EvalEpisodeLog;
  agent: AgentRecord;
  strategy: Strategy;
  model: string;
  sample: SampleInfo;
  sessionId: string;
  /** The policy version the trainer said it was at (null: none given). */
  policyVersion?: string | number | null;
}

/** The record of one finished episode (its group is filled in when the group is complete). */
export function buildRecord(input: RecordInput): RolloutRecord {
  const { log, agent, strategy } = input;
  const history = log.turn_history;
  const modelTurns = agent.turnMessages.length;
  const modelSubmitted = history.actions.slice(0, modelTurns).some((a, i) => /^submit\b/.test(a) && history.replies[i] !== '');
  const solvedStop = strategy.protocol.stopWhenSolved && isSolved(log.summary.max_reward);
  const terminated = log.truncated === undefined && (modelSubmitted || solvedStop);
  const truncation = log.truncated ?? (terminated ? null : `turn limit ${log.summary.turns_max} reached without a submit`);
  return {
    format: ROLLOUT_FORMAT,
    session_id: input.sessionId,
    env: input.envName,
    task_id: input.task.id,
    task_index: input.task.index,
    query: log.query,
    actions: [...history.actions],
    observations: [...history.observations],
    rewards: [...history.rewards],
    valid_action: [...history.valid_action],
    executed: history.actions.map((_, i) => agent.turnRan[i] ?? true),
    reward: log.summary.max_reward,
    reward_components: episodeComponents(log),
    step_components: [...history.reward_components],
    terminated,
    truncated: !terminated,
    truncation,
    not_scored: log.not_scored ?? null,
    policy: `llm:${input.model}`,
    strategy: strategy.name,
    model: input.model,
    sample: input.sample,
    group: null,
    policy_version: policyVersionOf(agent, input.policyVersion ?? null),
    messages: wireMessages(agent.messages) as unknown as WireMessage[],
    tools: wireTools(agent.tools) as RolloutRecord['tools'],
    turn_messages: [...agent.turnMessages],
    tokens: tokenRecord(agent.modelTurns),
    usage: log.usage,
  };
}

/** The parts of the episode's reward: those of the turn it was taken from ({} when none was scored). */
export function episodeComponents(log: EvalEpisodeLog): Record<string, number> {
  const at = log.summary.max_reward_idx;
  return (at >= 0 ? log.turn_history.reward_components[at] : null) ?? {};
}

/** The episode's policy versions: its first and last stamped replies', else the requested one. */
function policyVersionOf(agent: AgentRecord, requested: string | number | null): PolicyVersion {
  const stamped = agent.modelTurns.map((t) => t.policyVersion).filter((v) => v !== null);
  return { requested, start: stamped[0] ?? requested, end: stamped.at(-1) ?? requested };
}
