/**
 * The messages of each strategy, built from an env's {@link EnvPrompt}. Every opening
 * message carries the task's query verbatim, so a recorded model can tell episodes apart.
 */

import type { EnvPrompt } from './env-prompts.js';

const scoredNote = (p: EnvPrompt) => (p.scoredNote ? ` ${p.scoredNote}` : '');

const codeBlock = (p: EnvPrompt) => `\`\`\`${p.fence}\n<your ${p.language} code>\n\`\`\``;

/** Why a reply was not run, and how to answer instead (the observation of an invalid turn). */
export const retryMessage = (p: EnvPrompt, problem: string) =>
  `Nothing was run: ${problem}. Answer with one ${p.language} command in a code block, like this:\n${codeBlock(p)}`;

export const singleTurnSystem = (p: EnvPrompt) =>
  `You write ${p.language} for ${p.system}. You will get a task; answer with the one ${p.language} command that ` +
  `accomplishes it. It is run once and the result is checked against the correct answer.${scoredNote(p)}\n\n` +
  `Answer with the code only, in a code block:\n${codeBlock(p)}\nDo not explain and do not ask questions.`;

export const tryAgainSystem = (p: EnvPrompt, turns: number) =>
  `You write ${p.language} for ${p.system}. You will get a task and up to ${turns} tries. After each try you see ` +
  `the output of your code` +
  (p.feedsReward
    ? ' and a reward between 0 and 1 telling how close the result is to the correct one; a reward of 1 means the task is solved and ends the game.'
    : '.') +
  scoredNote(p) +
  `\n\nEach answer is one ${p.language} command in a code block, and nothing else:\n${codeBlock(p)}\n` +
  `Do not explain and do not ask questions: what you write is run as it is.` +
  (p.feedsReward ? '' : ` ${p.submitRule}`);

export const taskMessage = (firstObservation: string) => `Task: ${firstObservation}`;

export const tryAgainFeedback = (p: EnvPrompt, observation: string, reward: number | null, query: string) =>
  `Output:\n${observation}\n` +
  (reward === null ? '' : `Reward: ${reward}\n`) +
  `\nThe task again: ${query}\nTry a different ${p.language} command.`;

export const reactSystem = (p: EnvPrompt) =>
  `You solve tasks by working with ${p.system}, in steps. Each step is a Thought line, where you reason about ` +
  `what you know so far, and an Action line, which is one of:\n` +
  `- execute[<${p.language} code>]: runs the code; you are then shown an Observation with its output.\n` +
  `- submit${p.feedsReward ? '' : ' <answer>'}: ends the task; ${p.submitRule}\n\n` +
  `Answer with exactly one Thought line and one Action line per reply, then stop. Here is an example:\n\n${p.reactExample}`;

export const reactQuestion = (firstObservation: string) => `Question: ${firstObservation}`;
export const reactObservation = (observation: string) => `Observation: ${observation}`;
export const reactRetry = () =>
  'Your reply had no valid Action. End your reply with one line "Action: execute[<code>]" or "Action: submit".';

export const planSystem = (p: EnvPrompt) =>
  `You will get a task to solve with ${p.system}. First understand it and write a plan: a numbered list of ` +
  `steps, each one a ${p.language} command or query to run. Only the plan, no code yet. Examples:\n\n${p.planExample}`;

export const planExecuteSystem = (p: EnvPrompt) =>
  `Now carry out your plan one step at a time. Each message gives you the step to do (and the output of the ` +
  `previous one). Answer with the ${p.language} code for that step only, in a code block:\n${codeBlock(p)}`;

export const planRefineSystem = (p: EnvPrompt) =>
  `The plan is done but the answer is not right yet. Keep working on it: each message shows the output of your ` +
  `last command; answer with the next ${p.language} command in a code block:\n${codeBlock(p)}`;

export const planStep = (step: string, observation: string | null) =>
  observation === null ? `Step: ${step}` : `Observation: ${observation}\nStep: ${step}`;

/** The function tools of the `tools` strategy, described for the env. */
export const toolSpecs = (p: EnvPrompt) => [
  {
    name: 'execute',
    description: `Run ${p.language} code on ${p.system} and get its output${p.feedsReward ? ' and the reward the task would get if submitted now (0 to 1)' : ''}.`,
    parameters: {
      type: 'object',
      properties: { code: { type: 'string', description: `The ${p.language} code to run.` } },
      required: ['code'],
      additionalProperties: false,
    },
  },
  {
    name: 'submit',
    description: `End the task. ${p.submitRule.replace(/reply with `submit[^`]*`/i, 'call submit')}`,
    parameters: {
      type: 'object',
      properties: { answer: { type: 'string', description: p.feedsReward ? 'Leave out: the final state is scored.' : 'The answer (the flag).' } },
      required: [],
      additionalProperties: false,
    },
  },
];

export const toolsSystem = (p: EnvPrompt, turns: number) =>
  `You work with ${p.system} through function calls. You will get a task and up to ${turns} calls. ` +
  `Call \`execute\` with ${p.language} code to run it; its result comes back` +
  (p.feedsReward ? ' with a reward between 0 and 1 telling how close the result is to the correct one; a reward of 1 means the task is solved and ends it.' : '.') +
  `${scoredNote(p)} Call \`submit\`${p.feedsReward ? '' : ' with the answer'} when you are done. ` +
  `Every reply must call a function; text alone is not run.`;

/** A tool call's result: the output, and the reward where the env feeds it back. */
export const toolResult = (observation: string, reward: number | null) => (reward === null ? observation : `${observation}\nReward: ${reward}`);

export const toolsRetry = () => 'Nothing was run: your reply called no function. Call `execute` with code to run, or `submit`.';

export const toolCallError = (problem: string) => `Nothing was run: ${problem}. Call \`execute\` with {"code": "…"} or \`submit\`.`;
