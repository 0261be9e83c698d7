import type { EnvPrompt } from '../../src/agents/index.js';

/** What LLM strategies are told about this env. */
export const CTF_PROMPT: EnvPrompt = {
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
