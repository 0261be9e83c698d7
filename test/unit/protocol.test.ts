import { describe, expect, it } from 'vitest';
import { detectProtocol } from '../../src/replay/replay.js';
import { simplifyPath } from '../../src/sandbox/shell/intercode-exec-runner.js';
import { encodeCommand, parseMarker } from '../../src/sandbox/shell/shell-script.js';
import { renderObservation, type CommandResult } from '../../src/sandbox/shell/types.js';
import type { RecordedEpisode } from '../../src/trajectory/index.js';

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

describe('detectProtocol', () => {
  it('takes execute[...] actions as ReAct logs, scored only on submit', () => {
    expect(detectProtocol([episode(['execute[ls -l]', 'submit'])])).toBe('on-submit');
  });
  it('takes plain commands as Try Again / Plan & Solve logs, scored after every step', () => {
    expect(detectProtocol([episode(['ls', 'cat "execute[x]"', 'submit'])])).toBe('every-step');
  });
});

describe('simplifyPath (InterCode cd emulation)', () => {
  it.each([
    ['/', 'testbed', '/testbed'],
    ['/testbed', '..', '/'],
    ['/testbed', '../..', '/'],
    ['/a/b', './c/../d', '/a/b/d'],
    ['/a', '/x/y', '/x/y'],
    ['/a', '', '/a'],
    ['/', 'testbed && ls', '/testbed && ls'],
  ])('from %s, cd %s → %s', (current, arg, expected) => {
    expect(simplifyPath(current, arg)).toBe(expected);
  });
});

describe('shell wire format', () => {
  it('sends a header with the length, then the text in ASCII: backslashes doubled, other bytes as \\xHH, NUL dropped, newlines as they are', () => {
    expect(encodeCommand(7, 'printf "a\\tb"\necho \'x\'\0', 'f00d')).toBe('7:f00d 23\nprintf "a\\\\tb"\necho \'x\'');
    expect(encodeCommand(8, 'echo é€', 'ab')).toBe('8:ab 25\necho \\xc3\\xa9\\xe2\\x82\\xac');
    expect(encodeCommand(9, '', 'ab')).toBe('9:ab 0\n');
  });
  it('parses a marker, keeping spaces in the working directory', () => {
    expect(parseMarker('3:ab12 1 42 5 256 0 /tmp/a b')).toEqual({
      seq: 3, token: 'ab12', status: 1, shellPid: 42, pids: 5, pidsMax: 256, oomKills: 0, cwd: '/tmp/a b',
    });
  });
  it('reads "max" as an unknown limit', () => {
    expect(parseMarker('1:x 0 9 3 max 0 /').pidsMax).toBeNaN();
  });
  it('reads the start-up marker, which has no token', () => {
    expect(parseMarker('0 0 9 3 256 0 /')).toMatchObject({ seq: 0, token: '' });
  });
});

describe('renderObservation', () => {
  const base: CommandResult = { output: 'partial', exitCode: null, timedOut: true, outputBytes: 7, durationMs: 1, cwd: '/', events: [] };
  it('is the output alone when nothing happened', () => {
    expect(renderObservation({ ...base, events: [] })).toBe('partial');
  });
  it('appends one note line per event after the output', () => {
    expect(renderObservation({ ...base, events: [{ kind: 'timed-out', afterMs: 1500 }] })).toBe(
      'partial\n[intercode: command timed out after 1.5 s and was killed; output so far is shown]',
    );
  });
});
