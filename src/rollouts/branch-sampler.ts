/**
 * K samples of a task that share a prefix (`collect --branch-at STEP --branches K`): sample 0
 * plays the task; at the first model request after its STEP-th env step the env's episode is
 * forked into K−1 new envs (SandboxEnv.fork), and each continues from there as sample k with
 * its own seed. A child's agent is the same strategy started afresh whose first model
 * requests are answered with sample 0's replies (no request is sent) while its first env
 * calls are answered with sample 0's results (nothing runs): its dialogue and actions up to
 * the branch are sample 0's, checked call by call. Then it asks the model and steps its own
 * env. The prefix is played once instead of K times.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import type { ChatMessage, ChatModel, ChatReply, CompleteOptions, StrategyAgent } from '../agents/index.js';
import type { Task } from '../datasets/index.js';
import { ForkingTaskEnvWrapper, TaskEnvWrapper } from '../env/task-env-wrapper.js';
import type { ResetOptions, ResetResult, Score, StepOptions, StepResult, TaskEnv } from '../env/types.js';
import { CheckpointError, EnvStateError } from '../errors.js';
import { playEpisode } from '../eval/index.js';
import { groupAdvantages } from './groups.js';
import { buildRecord, type RolloutRecord } from './record.js';
import type { SampleOptions } from './sampler.js';
import { tokenRecord } from './token-record.js';

/** What a branched group's records say of the prefix they share. */
export interface BranchInfo {
  /** The group (the task's id), as `group.id`. */
  group_id: string;
  /** The sample whose episode is the prefix (sample 0), by session id: its record holds the prefix's token data. */
  prefix_session_id: string;
  /** Env steps of the prefix (the branch came at the first model request after them). */
  prefix_steps: number;
  /** Turns of the prefix (`actions` entries, invalid replies included): the same in every sample of the group. */
  prefix_turns: number;
  /** Model requests of the prefix: the first `prefix_model_turns` of every sample's dialogue are sample 0's. */
  prefix_model_turns: number;
  /**
   * Samples 1..K−1: `tokens.turns` lacks the prefix's model turns, and `tokens.episode` its
   * first `prefix_tokens` ids (the prefix's, in sample 0's record), so that the prefix's token
   * data is written once; null in sample 0, or when there is no episode token sequence.
   */
  prefix_tokens: number | null;
}

/** A rollout record of a branched group. */
export type BranchedRecord = RolloutRecord & { branch: BranchInfo | null };

/** One call an episode made to its env, with what it answered. */
type EnvCall = { kind: 'reset'; result: ResetResult } | { kind: 'step'; action: string; result: StepResult } | { kind: 'peek'; submission: string | undefined; result: Score };

/** Whose model requests are running: sample 0 (recorded until the branch) or a child (answered from the recording first). */
interface PrefixBranching {
  role: 'prefix';
  replies: ChatReply[];
  recording: boolean;
  beforeRequest: () => Promise<void>;
}
type Branching = PrefixBranching | { role: 'child'; replay: ChatReply[] };

/**
 * The model every branched episode asks: sample 0's requests are recorded until the branch;
 * a child's first requests are answered from that recording. Which episode asks is told by
 * the async context its episode runs in.
 */
export class BranchingModel implements ChatModel {
  private readonly context = new AsyncLocalStorage<Branching>();
  constructor(private readonly inner: ChatModel) {}

  get model(): string {
    return this.inner.model;
  }

  async complete(messages: readonly ChatMessage[], options?: CompleteOptions): Promise<ChatReply> {
    const branching = this.context.getStore();
    if (branching?.role === 'child' && branching.replay.length > 0) return branching.replay.shift()!;
    if (branching?.role === 'prefix') await branching.beforeRequest();
    const reply = await this.inner.complete(messages, options);
    if (branching?.role === 'prefix' && branching.recording) branching.replies.push(reply);
    return reply;
  }

  /** Runs `play` with its model requests as `branching` says. */
  run<T>(branching: Branching, play: () => Promise<T>): Promise<T> {
    return this.context.run(branching, play);
  }
}

/** Sample 0's env: its calls recorded until the branch. */
class PrefixRecorder extends ForkingTaskEnvWrapper {
  readonly calls: EnvCall[] = [];
  steps = 0;
  recording = true;
  override async reset(options?: ResetOptions): Promise<ResetResult> {
    const result = await this.env.reset(options);
    if (this.recording) this.calls.push({ kind: 'reset', result });
    return result;
  }
  override async step(action: string, options?: StepOptions): Promise<StepResult> {
    const result = await this.env.step(action, options);
    this.steps += 1;
    if (this.recording) this.calls.push({ kind: 'step', action, result });
    return result;
  }
  override async peekScore(submission?: string): Promise<Score> {
    const result = await this.env.peekScore(submission);
    if (this.recording) this.calls.push({ kind: 'peek', submission, result });
    return result;
  }
}

/** A child's env: the prefix's calls answered from sample 0's recording (each checked to be the same call), then its own forked env. */
class PrefixReplayEnv extends TaskEnvWrapper {
  private next = 0;
  constructor(
    env: TaskEnv,
    private readonly calls: readonly EnvCall[],
  ) {
    super(env);
  }
  private recorded<K extends EnvCall['kind']>(kind: K, what: string): Extract<EnvCall, { kind: K }> | undefined {
    if (this.next >= this.calls.length) return undefined;
    const call = this.calls[this.next++]!;
    if (call.kind !== kind) throw new EnvStateError(`a branched sample diverged from its prefix: call ${this.next} was ${call.kind} in sample 0, ${what} here`);
    return call as Extract<EnvCall, { kind: K }>;
  }
  override async reset(): Promise<ResetResult> {
    const call = this.recorded('reset', 'reset');
    if (!call) throw new EnvStateError('a branched sample reset past its prefix');
    return call.result;
  }
  override async step(action: string, options?: StepOptions): Promise<StepResult> {
    const call = this.recorded('step', `step ${JSON.stringify(action.slice(0, 64))}`);
    if (!call) return this.env.step(action, options);
    if (call.action !== action) throw new EnvStateError(`a branched sample diverged from its prefix: step ${JSON.stringify(action.slice(0, 64))} where sample 0 ran ${JSON.stringify(call.action.slice(0, 64))}`);
    return call.result;
  }
  override async peekScore(submission?: string): Promise<Score> {
    const call = this.recorded('peek', 'a score');
    if (!call) return this.env.peekScore(submission);
    if (call.submission !== submission) throw new EnvStateError('a branched sample diverged from its prefix: a score of another submission');
    return call.result;
  }
}

export interface BranchSampleOptions extends SampleOptions {
  /** The env steps sample 0 takes before the others branch off (≥ 1). */
  branchAt: number;
  /** The strategy's model, wrapped (the strategy must have been made with it). */
  branchingModel: BranchingModel;
  /** Called once per group: whether it branched (false: sample 0 ended before the branch point, or the env refused the fork, `reason`). */
  onBranch?: (task: Task, branched: boolean, reason?: string) => void;
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settle = <T>(promise: Promise<T>): Promise<Settled<T>> => promise.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));

/**
 * Plays K samples of every task, branched at `branchAt` (see the file's note), and hands each
 * group's records to `onGroup` with rewards, advantages and `branch` filled in. A group whose
 * sample 0 ended before the branch point, or whose env refused the fork (a CheckpointError),
 * is played as plain samples from reset on the same env, `branch` null.
 * @throws the first error an episode threw, after the episodes in flight settle.
 */
export async function sampleBranchedGroups(options: BranchSampleOptions): Promise<void> {
  const K = options.samplesPerTask;
  let done = 0;
  await options.executor.forEach(
    options.tasks.map((task, position) => ({ task, position })),
    async (env, { task, position }) => {
      const seedOf = (k: number) => options.seed + (options.positions?.(task) ?? position) * K + k;
      const sessionOf = (k: number) => `${options.stamp}-${task.id}-${k}`;
      const play = async (on: TaskEnv, k: number): Promise<{ record: RolloutRecord; agent: StrategyAgent }> => {
        let agent: StrategyAgent | undefined;
        const log = await playEpisode(on, options.strategy, task, { envName: options.envName, stepScoring: options.stepScoring, dataset: options.dataset, turns: options.turns, seed: seedOf(k) }, (a) => {
          agent = a;
        });
        const record = buildRecord({
          envName: options.envName,
          task,
          log,
          agent: agent!.record(),
          strategy: options.strategy,
          model: options.model,
          sample: { index: k, seed: seedOf(k), temperature: options.temperature },
          sessionId: sessionOf(k),
          policyVersion: options.policyVersion ?? null,
        });
        options.onEpisode?.(++done, record);
        return { record, agent: agent! };
      };

      const recorder = new PrefixRecorder(env);
      let branch: { steps: number; modelTurns: number; children: Promise<Settled<{ record: RolloutRecord; agent: StrategyAgent }>>[] } | undefined;
      let refused: string | undefined;
      const prefix: PrefixBranching = {
        role: 'prefix',
        replies: [],
        recording: true,
        beforeRequest: async () => {
          if (!prefix.recording || recorder.steps < options.branchAt || K === 1) return;
          prefix.recording = false;
          recorder.recording = false;
          let forks: TaskEnv[];
          try {
            forks = await recorder.fork(K - 1);
          } catch (error) {
            if (!(error instanceof CheckpointError)) throw error;
            refused = `${error.code}: ${error.message}`;
            return;
          }
          const replies = prefix.replies;
          branch = {
            steps: recorder.steps,
            modelTurns: replies.length,
            children: forks.map((child, i) => settle(options.branchingModel.run({ role: 'child', replay: [...replies] }, () => play(new PrefixReplayEnv(child, recorder.calls), i + 1)).finally(() => child.close()))),
          };
        },
      };
      const first = await settle(options.branchingModel.run(prefix, () => play(recorder, 0)));
      const rest = branch ? await Promise.all(branch.children) : [];
      for (const outcome of [first, ...rest]) if (!outcome.ok) throw outcome.error;
      const samples = [first, ...rest].map((outcome) => (outcome as { value: { record: RolloutRecord; agent: StrategyAgent } }).value);
      options.onBranch?.(task, branch !== undefined, branch ? undefined : (refused ?? `sample 0 ended before a model request after step ${options.branchAt}`));
      if (!branch) for (let k = 1; k < K; k++) samples.push(await play(env, k));

      const records: BranchedRecord[] = samples.map(({ record, agent }, k) => {
        if (!branch) return { ...record, branch: null };
        const info: BranchInfo = {
          group_id: task.id,
          prefix_session_id: sessionOf(0),
          prefix_steps: branch.steps,
          prefix_turns: turnsBefore(samples[0]!.record, samples[0]!.agent, branch.modelTurns),
          prefix_model_turns: branch.modelTurns,
          prefix_tokens: null,
        };
        if (k === 0) return { ...record, branch: info };
        const prefixTokens = tokenRecord(agent.record().modelTurns.slice(0, branch.modelTurns)).episode?.token_ids.length ?? null;
        const episode = record.tokens.episode;
        const cut = prefixTokens ?? 0;
        return {
          ...record,
          tokens: {
            ...record.tokens,
            turns: record.tokens.turns.slice(branch.modelTurns),
            episode: episode && prefixTokens !== null ? { token_ids: episode.token_ids.slice(cut), loss_mask: episode.loss_mask.slice(cut), logprobs: episode.logprobs?.slice(cut) ?? null } : episode,
          },
          branch: { ...info, prefix_tokens: episode ? prefixTokens : null },
        };
      });
      const rewards = records.map((r) => r.reward);
      const stats = groupAdvantages(rewards, options.scaleAdvantages);
      for (const [k, r] of records.entries()) {
        r.group = { id: task.id, size: K, rewards, mean: stats.mean, std: stats.std, advantage: stats.advantages[k]!, scaled: options.scaleAdvantages };
      }
      await options.onGroup(records);
    },
    options.signal,
  );
}

/** The turns of sample 0 that came from its first `modelTurns` model requests (the prefix's turns). */
function turnsBefore(record: RolloutRecord, agent: StrategyAgent, modelTurns: number): number {
  const { modelTurns: requests } = agent.record();
  if (modelTurns >= requests.length) return record.actions.length;
  const firstAfter = requests[modelTurns]!.message;
  return record.turn_messages.filter((message) => message >= 0 && message < firstAfter).length;
}
