import type { EnvPrompt } from '../../src/agents/index.js';

/** Harbor task directories (envs/task): a shell in the task's container; its hidden tests run on submit. */
export const TASK_PROMPT: EnvPrompt = {
  language: 'Bash',
  fence: 'bash',
  system: "a Linux machine through a Bash shell, in the working directory of a task; the task's tests are hidden and run when you submit",
  submitRule: 'When the task is done, reply with `submit`: the tests then run, once, on the machine as you leave it.',
  feedsReward: false,
  syntax: { fenceTags: ['bash', 'sh', 'shell', 'console'], unfenced: 'whole' },
  reactExample: `Question: Create a file called hello.txt with "Hello, world!" as the content.
Thought: I should check where I am first.
Action: execute[pwd]
Observation: /app
Thought: I will write the file here.
Action: execute[echo 'Hello, world!' > hello.txt && cat hello.txt]
Observation: Hello, world!
Thought: The file holds the right content.
Action: submit`,
  planExample: `Question: Fix the failing build of the project in /app.
Plan:
1. Run the build to see the error.
2. Read the file the error names and fix it.
3. Run the build again to check it passes, then submit.
Question: Write the number of lines of data.csv to count.txt.
Plan:
1. Count the lines with wc -l.
2. Write the number alone to count.txt.
3. Check the file, then submit.`,
};
