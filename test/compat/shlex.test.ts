import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ShlexError, shlexSplit } from '../../src/compat/index.js';

interface ShlexCase {
  input: string;
  wrapped: boolean;
  tokens?: string[];
  error?: string;
}

const url = new URL('../fixtures/scoring/shlex.json', import.meta.url);
const fixtures = (JSON.parse(readFileSync(url, 'utf8')) as { cases: ShlexCase[] }).cases;

function outcome(s: string): { tokens: string[] } | { error: string } {
  try {
    return { tokens: shlexSplit(s) };
  } catch (error) {
    if (!(error instanceof ShlexError)) throw error;
    return { error: error.message };
  }
}

describe('shlexSplit against Python shlex.split fixtures', () => {
  it('covers docker-py style `/bin/bash -c "<action>"` commands, both outcomes', () => {
    const wrapped = fixtures.filter((c) => c.wrapped);
    expect(wrapped.length).toBeGreaterThan(50);
    expect(wrapped.some((c) => c.error === 'No closing quotation')).toBe(true);
    expect(fixtures.some((c) => c.error === 'No escaped character')).toBe(true);
  });

  it('splits every fixture, or fails with the same message', () => {
    for (const c of fixtures) {
      const expected = c.error === undefined ? { tokens: c.tokens } : { error: c.error };
      expect(outcome(c.input), JSON.stringify(c.input)).toEqual(expected);
    }
  });
});

describe('shlexSplit semantics (hand-written)', () => {
  it('drops double quotes inside a double-quoted bash -c action', () => {
    expect(shlexSplit('/bin/bash -c "grep "TODO" . | wc -l"')).toEqual([
      '/bin/bash',
      '-c',
      'grep TODO . | wc -l',
    ]);
  });

  it('splits the action where an inner double quote exposes whitespace', () => {
    expect(shlexSplit('/bin/bash -c "echo "hello world""')).toEqual(['/bin/bash', '-c', 'echo hello', 'world']);
  });

  it('keeps $VAR, backticks and newlines for bash to expand', () => {
    expect(shlexSplit('/bin/bash -c "echo $HOME `date`\nls"')).toEqual(['/bin/bash', '-c', 'echo $HOME `date`\nls']);
  });

  it('treats backslashes as POSIX shells do', () => {
    expect(shlexSplit('a\\ b')).toEqual(['a b']); // outside quotes: escapes anything
    expect(shlexSplit('"a\\b"')).toEqual(['a\\b']); // in double quotes: kept before other chars
    expect(shlexSplit('"a\\"b"')).toEqual(['a"b']);
    expect(shlexSplit("'a\\b'")).toEqual(['a\\b']); // in single quotes: literal
  });

  it('keeps quoted empty strings and # as ordinary text', () => {
    expect(shlexSplit("echo '' \"\"")).toEqual(['echo', '', '']);
    expect(shlexSplit('echo # no comment')).toEqual(['echo', '#', 'no', 'comment']);
    expect(shlexSplit('  \t\n ')).toEqual([]);
  });

  it('throws ShlexError with Python messages', () => {
    // A lone single quote is literal inside the outer double quotes; a double quote is not.
    expect(shlexSplit("/bin/bash -c \"echo 'unbalanced\"")).toEqual(['/bin/bash', '-c', "echo 'unbalanced"]);
    expect(() => shlexSplit('/bin/bash -c "echo "unbalanced"')).toThrow(new ShlexError('No closing quotation'));
    expect(() => shlexSplit('/bin/bash -c "echo done\\"')).toThrow(new ShlexError('No closing quotation'));
    expect(() => shlexSplit('trailing \\')).toThrow(new ShlexError('No escaped character'));
    expect(() => shlexSplit('"')).toThrow(expect.objectContaining({ name: 'ShlexError' }));
  });
});
