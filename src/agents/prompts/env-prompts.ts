/**
 * What the prompts say about an environment. Strategies build their messages from these
 * facts (see templates.ts); each env gives its own (envs/<name>/prompt.ts), and the
 * commands hand them to the strategy they create ({@link StrategyOptions.prompt}).
 */

import type { ActionSyntax } from '../extract.js';

export interface EnvPrompt {
  /** The language actions are written in, as named to the model. */
  language: string;
  /** The fence tag the model is asked to use. */
  fence: string;
  /** What the model is talking to. */
  system: string;
  /** How an answer is submitted (end of the episode). */
  submitRule: string;
  /** What is scored after each action, where it is not simply the result (see step-scoring.ts); told in the single-turn and Try Again instructions. */
  scoredNote?: string;
  /** Whether the reward after each action is shown to the model (Try Again); false where it would give the answer away. */
  feedsReward: boolean;
  syntax: ActionSyntax;
  /** One worked ReAct episode (Question/Thought/Action/Observation lines), written for this env. */
  reactExample: string;
  /** Two example plans (Question/Plan lines), written for this env. */
  planExample: string;
}
