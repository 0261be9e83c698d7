import { describe, expect, it } from 'vitest';
import { extractAction } from '../../src/agents/index.js';
import { ENV_PLUGINS } from '../../envs/index.js';

const ENV_PROMPTS = Object.fromEntries(ENV_PLUGINS.map((p) => [p.name, p.agent.prompt]));

const bash = ENV_PROMPTS.bash!.syntax;
const sql = ENV_PROMPTS.sql!.syntax;
const python = ENV_PROMPTS.python!.syntax;

describe('extractAction on messy model outputs', () => {
  it('takes a reply without a fence as the whole command for bash', () => {
    expect(extractAction('  ls -la /testbed \n', bash)).toEqual({ action: 'ls -la /testbed' });
  });

  it('drops a label prefix and unwraps a lone inline code span', () => {
    expect(extractAction('Command: find . -name "*.py"', bash)).toEqual({ action: 'find . -name "*.py"' });
    expect(extractAction('`du -sh /var`', bash)).toEqual({ action: 'du -sh /var' });
  });

  it('takes the first SQL statement from prose without a fence, and nothing from prose without SQL', () => {
    expect(extractAction('Let me look: SELECT name FROM singer; then count.', sql)).toEqual({ action: 'SELECT name FROM singer' });
    expect(extractAction('Can you please provide the schema of the database?', sql)).toEqual({
      action: null,
      problem: 'the reply held no code block and no SQL statement',
    });
  });

  it('prefers the fence tagged with the env language among several fences', () => {
    const reply = 'First:\n```python\nprint(1)\n```\nthen\n```bash\necho two\n```\n```bash\necho three\n```';
    expect(extractAction(reply, bash)).toEqual({ action: 'echo two' });
  });

  it('takes the first untagged fence when none has the env tag, else the first fence', () => {
    expect(extractAction('```text\nfoo\n```\n```\nwc -l a\n```', bash)).toEqual({ action: 'wc -l a' });
    expect(extractAction('```text\nfoo\n```\n```json\n{}\n```', bash)).toEqual({ action: 'foo' });
  });

  it('strips a language tag, whatever its case, and keeps a multi-line script', () => {
    expect(extractAction('```BASH\ncd /tmp\nls\n```', bash)).toEqual({ action: 'cd /tmp\nls' });
    expect(extractAction('```sql SELECT 1```', sql)).toEqual({ action: 'SELECT 1' });
    expect(extractAction('```ls -l```', bash)).toEqual({ action: 'ls -l' });
  });

  it('ignores prose after (and before) the code', () => {
    const reply = 'Here you go:\n```sql\nSELECT count(*) FROM head WHERE age > 56;\n```\nThis counts the heads older than 56; SELECT nothing else.';
    expect(extractAction(reply, sql)).toEqual({ action: 'SELECT count(*) FROM head WHERE age > 56' });
  });

  it('cuts SQL at the first semicolon outside quotes', () => {
    expect(extractAction("```sql\nSELECT ';' AS s; DROP TABLE x;\n```", sql)).toEqual({ action: "SELECT ';' AS s" });
  });

  it('runs a fence the reply never closed (cut off at the token limit) to the end', () => {
    expect(extractAction('```bash\nfind / -name "*.log" | head', bash)).toEqual({ action: 'find / -name "*.log" | head' });
  });

  it('keeps Python indentation inside a fence', () => {
    const reply = 'Sure.\n```python\n\ndef f(x):\n    if x:\n        return 1\n    return 0\n```\nDone.';
    expect(extractAction(reply, python)).toEqual({ action: 'def f(x):\n    if x:\n        return 1\n    return 0' });
  });

  it('finds no action in an empty answer or an empty fence', () => {
    expect(extractAction('', bash)).toEqual({ action: null, problem: 'the reply was empty' });
    expect(extractAction('  \n ', sql)).toEqual({ action: null, problem: 'the reply was empty' });
    expect(extractAction('```bash\n\n```', bash)).toEqual({ action: null, problem: 'the code block was empty' });
  });

  it('passes submit, skip and submit <flag> through as they are', () => {
    expect(extractAction('submit', bash)).toEqual({ action: 'submit' });
    expect(extractAction(' Skip ', sql)).toEqual({ action: 'Skip' });
    expect(extractAction('submit picoCTF{abc_123}', ENV_PROMPTS.ctf!.syntax)).toEqual({ action: 'submit picoCTF{abc_123}' });
  });
});

describe('extractAction with longer fences', () => {
  it('reads a four-backtick fence holding code that contains ```', () => {
    expect(extractAction('````bash\necho "```"\n````\nafter', bash)).toEqual({ action: 'echo "```"' });
  });
});
