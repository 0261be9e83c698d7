import type { EnvPrompt } from '../../src/agents/index.js';

/** What LLM strategies are told about this env. */
export const PYTHON_PROMPT: EnvPrompt = {
  language: 'Python',
  fence: 'python',
  system: 'a Python 3 interpreter',
  submitRule: 'Write the requested function as one `def` block; it is tested as soon as you define it.',
  scoredNote:
    'Write the requested function as one block that starts with its `def` line (put imports inside the function): it is tested as soon as it is defined. Code that does not start with `def` is run but not tested.',
  feedsReward: true,
  syntax: { fenceTags: ['python', 'py', 'python3'], unfenced: 'whole', keepIndentation: true },
  reactExample: `Question: Write a function that returns the second largest number of a list.
Thought: Sorting the distinct values and taking the one before last works for lists with two distinct values.
Action: execute[def second_largest(xs):
    values = sorted(set(xs))
    return values[-2]]
Observation: 
Thought: Let me try it on a small list.
Action: execute[print(second_largest([3, 1, 4, 4]))]
Observation: 3
Thought: That is right; the function is defined.
Action: submit`,
  planExample: `Question: Write a function that counts the vowels in a string.
Plan:
1. Define a function that walks over the characters of the string.
2. Count the characters that are in "aeiouAEIOU".
3. Call it on a short example to check the count.
Question: Write a function that reverses each word of a sentence.
Plan:
1. Define a function that splits the sentence on spaces.
2. Reverse every word and join them back with spaces.
3. Check it on a two-word sentence.`,
};
