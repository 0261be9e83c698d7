import type { EpisodeContext, Turn } from '../policy/index.js';
import { NO_TOKENS, type ChatMessage, type ChatReply, type ToolCall, type ToolSpec } from './model/chat-model.js';
import { addReply, emptyUsage, type EpisodeUsage } from './model/usage.js';
import type { EnvPrompt } from './prompts/env-prompts.js';
import type { AgentRecord, ModelTurn, Move, StrategyAgent, StrategyOptions } from './strategy.js';

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
  /** Every message of the episode, in order (the dialogue limit drops none here). */
  private readonly transcript: ChatMessage[] = [];
  private readonly modelTurns: ModelTurn[] = [];
  private readonly turnMessages: number[] = [];
  private readonly turnRan: boolean[] = [];
  /** Function tools offered with every request (none for text strategies). */
  protected tools: readonly ToolSpec[] = [];

  constructor(protected readonly context: EpisodeContext, protected readonly options: StrategyOptions) {
    this.prompt = options.prompt;
    // Every move that makes a turn is noted with the reply it came from (the latest assistant message).
    const move = this.move.bind(this);
    this.move = async (history) => {
      const next = await move(history);
      if (next.kind !== 'stop') {
        this.turnMessages.push(this.transcript.findLastIndex((m) => m.role === 'assistant'));
        this.turnRan.push(next.kind === 'action');
      }
      return next;
    };
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

  /** The whole dialogue, the tools offered, and the server's tokens of every model turn. */
  record(): AgentRecord {
    return {
      messages: this.transcript.map((m) => ({ ...m })),
      tools: [...this.tools],
      modelTurns: this.modelTurns.map((t) => ({ ...t })),
      turnMessages: [...this.turnMessages],
      turnRan: [...this.turnRan],
    };
  }

  /** Appends messages that the dialogue limit must never drop (instructions, the task). */
  protected pin(...messages: ChatMessage[]): void {
    this.messages.push(...messages);
    this.transcript.push(...messages);
    this.pinned = this.messages.length;
  }

  /** Appends `messages`, asks the model, appends its reply and returns its text. */
  protected async ask(...messages: ChatMessage[]): Promise<string> {
    return (await this.askReply(...messages)).content;
  }

  /** Appends `messages`, asks the model (with the agent's tools, if any), appends its reply (with its tool calls) and returns it. */
  protected async askReply(...messages: ChatMessage[]): Promise<ChatReply & { toolCalls: ToolCall[] }> {
    this.messages.push(...messages);
    this.transcript.push(...messages);
    const limit = this.options.dialogueLimit;
    if (limit !== undefined && this.messages.length - this.pinned > limit) {
      this.messages.splice(this.pinned, this.messages.length - this.pinned - limit);
    }
    const seed = this.context.seed;
    const reply = await this.options.model.complete(this.messages, {
      ...(this.tools.length > 0 ? { tools: this.tools } : {}),
      ...(seed !== undefined ? { seed } : {}),
    });
    addReply(this.usage, reply, this.options.prices);
    const toolCalls = reply.toolCalls ?? [];
    const answer: ChatMessage = { role: 'assistant', content: reply.content, ...(toolCalls.length > 0 ? { toolCalls } : {}) };
    this.messages.push(answer);
    this.transcript.push(answer);
    this.modelTurns.push({ message: this.transcript.length - 1, ...(reply.tokens ?? NO_TOKENS), finishReason: reply.finishReason ?? null, policyVersion: reply.policyVersion ?? null, ...reply.usage });
    return { ...reply, toolCalls };
  }

  /** Appends messages without asking the model (tool results that answer calls still queued). */
  protected tell(...messages: ChatMessage[]): void {
    this.messages.push(...messages);
    this.transcript.push(...messages);
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
