/**
 * What the prompts say about each environment, keyed by the env's CLI name. Strategies
 * build their messages from these facts (see templates.ts); a new env adds one entry.
 */

import { ConfigError } from '../../errors.js';
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

const BASH: EnvPrompt = {
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

const SQL: EnvPrompt = {
  language: 'SQL',
  fence: 'sql',
  system: 'a MySQL database',
  submitRule: 'Reply with `submit` when the result of your last query answers the question.',
  feedsReward: true,
  syntax: { fenceTags: ['sql', 'mysql'], unfenced: 'sql', singleStatement: true },
  reactExample: `Question: Which city hosts the most stadiums?
Thought: I do not know the tables yet; I should list them.
Action: execute[SHOW TABLES]
Observation: [('stadium',), ('team',)]
Thought: The stadium table should have a city column. Let me check its columns.
Action: execute[DESCRIBE stadium]
Observation: [('id', 'int', 'NO', 'PRI', None, ''), ('name', 'text', 'YES', '', None, ''), ('city', 'text', 'YES', '', None, '')]
Thought: I can group stadiums by city and keep the largest group.
Action: execute[SELECT city FROM stadium GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1]
Observation: [('Leeds',)]
Thought: The result is the city with the most stadiums.
Action: submit`,
  planExample: `Question: List the names of employees hired after 2020.
Plan:
1. Show the tables to find the one about employees.
2. Describe that table to find the name and hiring-date columns.
3. Select the names whose hiring date is after 2020.
Question: What is the average price of products in each category?
Plan:
1. Show the tables to find the products table.
2. Describe it to find the price and category columns.
3. Group the products by category and average their price.`,
};

const PYTHON: EnvPrompt = {
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

const CTF: EnvPrompt = {
  language: 'Bash',
  fence: 'bash',
  system: 'a Linux machine through a Bash shell (Python is installed too), in a folder holding the files of a capture-the-flag task',
  submitRule: 'When you have found the flag (it looks like picoCTF{...}), reply with `submit picoCTF{...}`.',
  feedsReward: false,
  syntax: { fenceTags: ['bash', 'sh', 'shell', 'console', 'python', 'py'], unfenced: 'whole' },
  reactExample: `Question: The flag is hidden somewhere in the file given to you.
Thought: I should see what files there are.
Action: execute[ls -la]
Observation: -rw-r--r-- 1 root root 8192 Jan  1 00:00 data.bin
Thought: A binary file; printable strings may contain the flag.
Action: execute[strings data.bin | grep -o "picoCTF{[^}]*}"]
Observation: picoCTF{str1ngs_4r3_34sy}
Thought: That is the flag.
Action: submit picoCTF{str1ngs_4r3_34sy}`,
  planExample: `Question: Decode the message in cipher.txt to get the flag.
Plan:
1. Print cipher.txt to see what kind of encoding it uses.
2. Decode it with the matching tool (base64, rot13, hex).
3. Submit the flag found in the decoded text.
Question: The program check.py asks for a password; find it.
Plan:
1. Read check.py to see how the password is checked.
2. Reverse the check to compute the password.
3. Run the program with it and submit the flag it prints.`,
};

/** Harbor task directories (envs/task): a shell in the task's container; its hidden tests run on submit. */
const TASK: EnvPrompt = {
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

/** Prompts of every env the agents know, by the env's CLI name. */
export const ENV_PROMPTS: Readonly<Record<string, EnvPrompt>> = { bash: BASH, sql: SQL, python: PYTHON, ctf: CTF, task: TASK };

/** @throws ConfigError naming `--env` when the env has no prompts. */
export function envPrompt(envName: string): EnvPrompt {
  const prompt = ENV_PROMPTS[envName];
  if (!prompt) throw new ConfigError('--env', `has no agent prompts for "${envName}" (prompts exist for ${Object.keys(ENV_PROMPTS).join(', ')})`);
  return prompt;
}
