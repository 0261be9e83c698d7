import type { EpisodeContext, Turn } from '../policy/index.js';
import type { ChatMessage } from './model/chat-model.js';
import { addReply, emptyUsage, type EpisodeUsage } from './model/usage.js';
import { envPrompt, type EnvPrompt } from './prompts/env-prompts.js';
import type { Move, StrategyAgent, StrategyOptions } from './strategy.js';

/**
 * What every chat-based strategy agent shares: the dialogue (with InterCode's dialogue
 * limit: the opening messages are always kept, then only the most recent ones), token
 * accounting, and `act()` for the plain {@link Agent} contract.
 */
export abstract class ChatAgent implements StrategyAgent {
  readonly usage: EpisodeUsage = emptyUsage();
  protected readonly prompt: EnvPrompt;
  protected readonly messages: ChatMessage[] = [];
  /** How many of the history's turns the dialogue already shows. */
  protected seen = 0;
  /** Messages at the start of the dialogue that the dialogue limit never drops. */
  private pinned = 0;

  constructor(protected readonly context: EpisodeContext, protected readonly options: StrategyOptions) {
    this.prompt = envPrompt(context.envName);
  }

  abstract move(history: readonly Turn[]): Promise<Move>;

  /**
   * The plain policy contract (what `rollout` calls): the action, `submit` when the
   * strategy stops, and a reply without an action is sent to the env as it is (so the
   * env's error message is the feedback), or `skip` when it was empty.
   */
  async act(history: readonly Turn[]): Promise<string> {
    const move = await this.move(history);
    if (move.kind === 'action') return move.action;
    if (move.kind === 'stop') return 'submit';
    return move.reply.trim() || 'skip';
  }

  /** Appends messages that the dialogue limit must never drop (instructions, the task). */
  protected pin(...messages: ChatMessage[]): void {
    this.messages.push(...messages);
    this.pinned = this.messages.length;
  }

  /** Appends `messages`, asks the model, appends its reply and returns it. */
  protected async ask(...messages: ChatMessage[]): Promise<string> {
    this.messages.push(...messages);
    const limit = this.options.dialogueLimit;
    if (limit !== undefined && this.messages.length - this.pinned > limit) {
      this.messages.splice(this.pinned, this.messages.length - this.pinned - limit);
    }
    const reply = await this.options.model.complete(this.messages);
    addReply(this.usage, reply, this.options.prices);
    this.messages.push({ role: 'assistant', content: reply.content });
    return reply.content;
  }

  /** The turns of `history` the dialogue has not shown yet (and marks them shown). */
  protected unseen(history: readonly Turn[]): readonly Turn[] {
    const fresh = history.slice(this.seen);
    this.seen = history.length;
    return fresh;
  }

  /** An observation cut to the strategy's limit, or a note that there was none. */
  protected clip(observation: string, defaultLimit: number): string {
    const limit = this.options.observationLimit ?? defaultLimit;
    if (observation.trim() === '') return '(no output)';
    return observation.length > limit ? `${observation.slice(0, limit)}\n[… output cut at ${limit} characters]` : observation;
  }
}
