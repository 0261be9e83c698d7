/**
 * A "model" that answers with what a recorded InterCode run did: each episode's replies are
 * rebuilt from its logged actions (and thoughts, and plan), in order. The episode is found
 * by its task query appearing in the request's messages; the reply's position is the number
 * of assistant messages already in the dialogue.
 */

import type { ChatMessage } from '../agents/index.js';
import { readRecordedTrajectories, type RecordedEpisode } from '../trajectory/index.js';

/** InterCode's observation for a reply it found no code in (multi-turn: "No SQL code was found…"; ReAct: "…did not contain sql code"). */
const NO_CODE = /(?:^No \w+ code was found in your last response|did not contain \w+ code)/;

/** How a recorded file's replies are shaped. */
export type RecordedStyle = 'code' | 'react' | 'plan';

interface Script {
  style: RecordedStyle;
  query: string;
  replies: string[];
  /** The same replies as function calls: null where the recording found no code (the prose reply is then given). */
  calls: (RecordedCall | null)[];
}

/** A recorded action as a call of the `tools` strategy's functions. */
export interface RecordedCall {
  name: 'execute' | 'submit';
  arguments: Record<string, string>;
}

export type RecordedAnswer =
  | { reply: string; call: RecordedCall | null; episode: number; turn: number; beyondRecording: boolean }
  | { error: string };

export class RecordedModel {
  private constructor(readonly style: RecordedStyle, private readonly scripts: Script[], readonly episodes: number) {}

  /**
   * Loads a recorded InterCode evaluation file (any layout {@link readRecordedTrajectories} reads).
   * @param fenceOf the fence tag replies are written in, by the log's `environment` field (`ic_bash`); '' for none.
   * @throws TrajectoryError naming the file, episode and field when it is malformed.
   */
  static async load(file: string, fenceOf: (environment: string) => string): Promise<RecordedModel> {
    const episodes = await readRecordedTrajectories(file);
    const history = (e: RecordedEpisode) => ((e.raw as { turn_history?: Record<string, unknown> }).turn_history ?? {});
    const style: RecordedStyle = episodes.some((e) => Array.isArray(history(e).steps))
      ? 'plan'
      : episodes.some((e) => Array.isArray(history(e).thoughts))
        ? 'react'
        : 'code';
    const scripts = episodes.map((e) => {
      const environment = String((e.raw as { environment?: unknown }).environment ?? '');
      return { style, query: e.query.trim(), replies: repliesOf(e, style, fenceOf(environment), history(e)), calls: callsOf(e, style) };
    });
    // Longest queries first, so a query that contains another one wins.
    scripts.sort((a, b) => b.query.length - a.query.length);
    return new RecordedModel(style, scripts, episodes.length);
  }

  /**
   * The reply to a chat request: the recorded episode whose query occurs in a system or user
   * message, at the position given by the number of assistant messages. Past the end of a
   * recording the last reply is repeated (a deterministic model asked again).
   */
  answer(messages: readonly ChatMessage[]): RecordedAnswer {
    const asked = messages.filter((m) => m.role === 'system' || m.role === 'user').map((m) => m.content);
    const index = this.scripts.findIndex((s) => asked.some((text) => text.includes(s.query)));
    if (index === -1) return { error: 'no recorded episode has a query that occurs in the messages' };
    const script = this.scripts[index]!;
    const turn = messages.filter((m) => m.role === 'assistant').length;
    if (script.replies.length === 0) return { error: `the recorded episode for "${script.query.slice(0, 80)}" has no reply` };
    const beyondRecording = turn >= script.replies.length;
    const at = script.style === 'plan' ? -1 : Math.min(turn, script.replies.length - 1);
    return { reply: script.replies[Math.min(turn, script.replies.length - 1)]!, call: at < 0 ? null : (script.calls[at] ?? null), episode: index, turn, beyondRecording };
  }
}

/** `action` in a code block whose fence is longer than any backtick run inside it (so it comes back verbatim). */
function fenced(action: string, tag: string): string {
  const longest = Math.max(0, ...(action.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${tag}\n${action}\n${fence}`;
}

function repliesOf(episode: RecordedEpisode, style: RecordedStyle, fence: string, history: Record<string, unknown>): string[] {
  const code = episode.actions.map((action, k) => (NO_CODE.test(episode.observations[k] ?? '') ? action : fenced(action, fence)));
  if (style === 'plan') {
    const steps = Array.isArray(history.steps) ? history.steps.map(String) : [];
    return [`Plan:\n${steps.map((s, i) => `${i + 1}. ${s}`).join('\n')}`, ...code];
  }
  if (style === 'react') {
    const thoughts = Array.isArray(history.thoughts) ? history.thoughts.map(String) : [];
    return episode.actions.map((action, k) => `Thought: ${thoughts[k] ?? ''}\nAction: ${action}`);
  }
  return code;
}

/**
 * Each recorded action as a function call: `submit…` as `submit` (with the answer after it,
 * if any), ReAct's `execute[…]` as `execute` of what the brackets hold, any other action as
 * `execute` of it; null where InterCode found no code in the reply. Plan files have none
 * (their first reply is the plan).
 */
function callsOf(episode: RecordedEpisode, style: RecordedStyle): (RecordedCall | null)[] {
  if (style === 'plan') return [];
  return episode.actions.map((action, k): RecordedCall | null => {
    if (NO_CODE.test(episode.observations[k] ?? '')) return null;
    const trimmed = action.trim();
    if (/^submit\b/i.test(trimmed)) {
      const answer = trimmed.slice('submit'.length).trim();
      return { name: 'submit', arguments: answer === '' ? {} : { answer } };
    }
    const react = style === 'react' ? /^execute\[([\s\S]*)\]$/.exec(trimmed) : null;
    return { name: 'execute', arguments: { code: react ? react[1]! : action } };
  });
}
