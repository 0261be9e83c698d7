import type { EnvPrompt } from '../../src/agents/index.js';

/** What LLM strategies are told about this env. */
export const BASH_PROMPT: EnvPrompt = {
  language: 'Bash',
  fence: 'bash',
  system: 'a Linux machine through a Bash shell',
  submitRule: 'Reply with `submit` when the output of your last command answers the task, or when the file system is in the requested state.',
  feedsReward: true,
  syntax: { fenceTags: ['bash', 'sh', 'shell', 'console'], unfenced: 'whole' },
  reactExample: `Question: How many lines do the .log files under /srv/app have in total?
Thought: I should list the .log files first to see where they are.
Action: execute[find /srv/app -name "*.log"]
Observation: /srv/app/a.log
/srv/app/old/b.log
Thought: Two files. cat them together and count the lines to get a single total.
Action: execute[find /srv/app -name "*.log" -exec cat {} + | wc -l]
Observation: 42
Thought: The output is one number, the total. I am done.
Action: submit`,
  planExample: `Question: Delete every empty file in /data/tmp.
Plan:
1. List the empty files in /data/tmp to see what will be removed.
2. Delete the empty files found.
3. Check that no empty file is left.
Question: Show the five largest files under /var/www with their sizes.
Plan:
1. Check that /var/www exists.
2. List every file under /var/www with its size in bytes.
3. Sort by size, largest first, and keep the first five.`,
};
