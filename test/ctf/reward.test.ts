/** The CTF reward and submission parsing, and the on-flag replay protocol's detection (no Docker). */
import { describe, expect, it } from 'vitest';
import { flagScore, submittedFlag } from '../../envs/ctf/index.js';
import { detectProtocol } from '../../src/replay/replay.js';
import type { RecordedEpisode } from '../../src/trajectory/index.js';

describe('submittedFlag', () => {
  it('takes the rest of the action after submit, trimmed', () => {
    expect(submittedFlag('submit flag{abc}')).toBe('flag{abc}');
    expect(submittedFlag('  submit    flag{abc}  \n')).toBe('flag{abc}');
    expect(submittedFlag('submit\tflag{abc}')).toBe('flag{abc}');
  });

  it('keeps quotes and spaces inside the flag', () => {
    expect(submittedFlag(`submit flag{it's "quoted" here}`)).toBe(`flag{it's "quoted" here}`);
    expect(submittedFlag("submit 'flag{x}'")).toBe("'flag{x}'");
  });

  it('treats a bare submit as the empty flag', () => {
    expect(submittedFlag('submit')).toBe('');
    expect(submittedFlag('  submit  ')).toBe('');
  });

  it('is not a submission unless the first word is submit', () => {
    expect(submittedFlag('submitted flag{x}')).toBeUndefined();
    expect(submittedFlag('echo submit flag{x}')).toBeUndefined();
    expect(submittedFlag('ls')).toBeUndefined();
  });
});

describe('flagScore', () => {
  it('scores 1 for the gold flag in any case, 0 otherwise', () => {
    expect(flagScore('picoCTF{AbC}', 'picoCTF{AbC}').reward).toBe(1);
    expect(flagScore('PICOCTF{abc}', 'picoCTF{AbC}').reward).toBe(1);
    expect(flagScore('picoCTF{abd}', 'picoCTF{AbC}').reward).toBe(0);
    expect(flagScore('', 'picoCTF{AbC}').reward).toBe(0);
    expect(flagScore(' picoCTF{AbC}', 'picoCTF{AbC}').reward).toBe(0);
  });

  it('reports the submitted flag as agent_obs, as InterCode did', () => {
    expect(flagScore('x', 'y')).toEqual({ reward: 0, parts: { flag: 0 }, details: { agent_obs: 'x', correct: false } });
  });
});

const episode = (actions: string[]): RecordedEpisode => ({
  taskIndex: 0,
  query: 'q',
  actions,
  observations: actions.map(() => ''),
  rewards: actions.map(() => 0),
  validActions: actions.map(() => true),
  noCode: actions.map(() => false),
  blockedTurns: 0,
  maxReward: 0,
  raw: {},
});

describe('detectProtocol for CTF files', () => {
  it('marks files with flag submissions as on-flag', () => {
    expect(detectProtocol([episode(['ls', 'cat x']), episode(['strings a', 'submit picoCTF{x}'])])).toBe('on-flag');
  });

  it('leaves bare submits (bash, SQL) and ReAct files as they were', () => {
    expect(detectProtocol([episode(['ls', 'submit'])])).toBe('every-step');
    expect(detectProtocol([episode(['execute[ls]', 'submit'])])).toBe('on-submit');
  });
});
