/**
 * Near-duplicate removal: before a policy learns from the NL2Bash corpus (or from training
 * tasks), every pair that is a near-duplicate of a held-out task is removed, so a held-out
 * success cannot come from having seen the task. InterCode's tasks were adapted from this
 * corpus, often with only paths (and file patterns) changed, so the comparison abstracts them.
 *
 * The rule: a pair (description, command) is a near-duplicate of a task (query, gold) when
 * - their descriptions share at least {@link DESCRIPTION_JACCARD} of their content-word
 *   sets (Jaccard; lower-cased words, punctuation and stop words dropped), or
 * - their commands' templates share at least {@link COMMAND_JACCARD} of their token bigram
 *   sets (Jaccard), where a template is the command's shell tokens with quotes dropped,
 *   paths, numbers and glob patterns replaced by placeholders.
 */

import { queryTerms } from './retrieval.js';

/** Word-set Jaccard of two descriptions at or above which they are near-duplicates. */
export const DESCRIPTION_JACCARD = 0.5;
/** Template-bigram Jaccard of two commands at or above which they are near-duplicates. */
export const COMMAND_JACCARD = 0.6;

/** The rule in words, recorded in each run's config. */
export const NEAR_DUPLICATE_RULE = `description content-word-set Jaccard >= ${DESCRIPTION_JACCARD}, or command-template bigram Jaccard >= ${COMMAND_JACCARD} (template: shell tokens, quotes dropped, paths/numbers/globs abstracted), against any held-out task's query and gold`;

/** Lower-cased content words of a description (punctuation and stop words dropped). */
export function descriptionWords(text: string): Set<string> {
  return new Set(queryTerms(text));
}

const SHELL_TOKEN = /"[^"]*"|'[^']*'|[|;&<>()]+|[^\s|;&<>()]+/g;

/** A command's shell tokens with quotes dropped and its particulars abstracted: PATH, NUM, GLOB. */
export function commandTemplate(command: string): string[] {
  return (command.match(SHELL_TOKEN) ?? []).map((raw) => {
    const token = raw.replace(/^["']|["']$/g, '');
    if (/[*?]/.test(token) && !/^[-|]/.test(token)) return 'GLOB';
    if (token.includes('/') && !/^[-+]?\d/.test(token) && !/^s\//.test(token)) return 'PATH';
    if (/^[-+]?\d+[kMGcb]?$/.test(token)) return 'NUM';
    return token;
  });
}

function bigrams(tokens: readonly string[]): Set<string> {
  const out = new Set<string>();
  const padded = ['^', ...tokens, '$'];
  for (let i = 1; i < padded.length; i++) out.add(`${padded[i - 1]} ${padded[i]}`);
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  return shared / (a.size + b.size - shared);
}

/** A description/command pair as the rule compares it. */
export interface TextPair {
  description: string;
  command: string;
}

/** Why a pair was found a near-duplicate of a task, or undefined when it is not one. */
export type NearDuplicateReason = 'description' | 'command';

/** Pre-computed sets of the tasks a pair is compared against (held-out tasks). */
export class NearDuplicateFilter {
  private readonly words: Set<string>[];
  private readonly templates: Set<string>[];

  constructor(tasks: readonly TextPair[]) {
    this.words = tasks.map((t) => descriptionWords(t.description));
    this.templates = tasks.map((t) => bigrams(commandTemplate(t.command)));
  }

  /** Whether `pair` is a near-duplicate of any task, and by which part of the rule. */
  reason(pair: TextPair): NearDuplicateReason | undefined {
    const words = descriptionWords(pair.description);
    if (this.words.some((w) => jaccard(words, w) >= DESCRIPTION_JACCARD)) return 'description';
    const template = bigrams(commandTemplate(pair.command));
    if (this.templates.some((t) => jaccard(template, t) >= COMMAND_JACCARD)) return 'command';
    return undefined;
  }

  /** The pairs that are not near-duplicates, and how many were removed by each part of the rule. */
  filter<T extends TextPair>(pairs: readonly T[]): { kept: T[]; removed: { description: number; command: number } } {
    const kept: T[] = [];
    const removed = { description: 0, command: 0 };
    for (const pair of pairs) {
      const why = this.reason(pair);
      if (why) removed[why]++;
      else kept.push(pair);
    }
    return { kept, removed };
  }
}
