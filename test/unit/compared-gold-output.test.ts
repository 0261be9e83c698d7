/**
 * `--eval-obs`: which part of the gold output the bash answer term compares, and how replay reads it from a
 * recording's logs (InterCode's Try Again fs-1/fs-3 logs cut the gold output to the agent output's length).
 */
import { describe, expect, it } from 'vitest';
import { comparedGoldOutput, detectComparedGoldOutput, parseComparedGoldOutput } from '../../envs/bash/compared-gold-output.js';
import { chooseComparedGoldOutput } from '../../envs/bash/plugin.js';
import { bashReward } from '../../envs/bash/reward.js';
import { ConfigError } from '../../src/errors.js';
import type { RecordedEpisode } from '../../src/trajectory/index.js';

const GOLD = '/workspace\n/workspace/dir1\n/workspace/dir2\n';
const AGENT = '/workspace/dir1/\n/workspace/dir2/\n';

describe('comparedGoldOutput', () => {
  it('full keeps the whole gold output', () => {
    expect(comparedGoldOutput(GOLD, AGENT, 'full')).toBe(GOLD);
  });

  it("tail keeps the gold output's last n characters, n the agent output's length (fs-3 task 4 as recorded)", () => {
    expect(comparedGoldOutput(GOLD, AGENT, 'tail')).toBe('e\n/workspace/dir1\n/workspace/dir2\n');
  });

  it("tail keeps all of it when the agent printed nothing (Python's s[-0:]) or more than the gold", () => {
    expect(comparedGoldOutput(GOLD, '', 'tail')).toBe(GOLD);
    expect(comparedGoldOutput('ab\n', 'longer output\n', 'tail')).toBe('ab\n');
    expect(comparedGoldOutput(null, AGENT, 'tail')).toBeNull();
    expect(comparedGoldOutput(GOLD, null, 'tail')).toBe(GOLD);
  });

  it('counts characters as Python does (code points, not UTF-16 units)', () => {
    expect(comparedGoldOutput('héllo 😀 wörld', 'ab😀', 'tail')).toBe('rld');
    expect(comparedGoldOutput('abc😀d', '12', 'tail')).toBe('😀d');
  });

  it("changes the answer term as InterCode's recorded fs-3 task 4 shows: 0.33 on the cut text, 0.32 on the whole", () => {
    const score = (gold: string | null) =>
      bashReward({ observation: AGENT, changes: [], hashes: new Map() }, { observation: gold, changes: [], hashes: new Map() }).parts.answer_similarity;
    expect(score(comparedGoldOutput(GOLD, AGENT, 'tail'))).toBe(0.33);
    expect(score(GOLD)).toBe(0.32);
  });

  it('refuses an unknown mode naming the flag', () => {
    expect(() => parseComparedGoldOutput('head')).toThrow(ConfigError);
    expect(() => parseComparedGoldOutput('head')).toThrow(/--eval-obs.*full, tail.*"head"/);
  });
});

const episode = (agent: string, gold: string): RecordedEpisode => ({
  taskIndex: 0,
  query: 'q',
  actions: [],
  observations: [],
  rewards: [],
  validActions: [],
  noCode: [],
  blockedTurns: 0,
  maxReward: 0,
  raw: { info: { agent_obs: agent, eval_obs: gold } },
});

describe('detectComparedGoldOutput', () => {
  it('finds tail when some gold outputs are cut to the agent length and none is longer than a non-empty agent output', () => {
    const found = detectComparedGoldOutput([episode(AGENT, 'e\n/workspace/dir1\n/workspace/dir2\n'), episode('', GOLD), episode('same', 'same'), episode('long output', 'x')]);
    expect(found).toEqual({ mode: 'tail', cut: 1, longer: 0 });
  });

  it('finds full when a gold output is longer than a non-empty agent output', () => {
    expect(detectComparedGoldOutput([episode(AGENT, 'e\n/workspace/dir1\n/workspace/dir2\n'), episode('ab', GOLD)])).toEqual({ mode: 'full', cut: 1, longer: 1 });
  });

  it('finds full without evidence (no info, or outputs that agree)', () => {
    expect(detectComparedGoldOutput([{ ...episode('', ''), raw: {} }, episode('a', 'a')]).mode).toBe('full');
  });
});

describe('chooseComparedGoldOutput', () => {
  it('takes the flag over the recording, detects from a recording, and defaults to full', () => {
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const cutRecording = [episode(AGENT, 'e\n/workspace/dir1\n/workspace/dir2\n')];
    expect(chooseComparedGoldOutput('full', cutRecording, log)).toBe('full');
    expect(lines).toEqual([]);
    expect(chooseComparedGoldOutput(undefined, cutRecording, log)).toBe('tail');
    expect(lines[0]).toMatch(/gold output compared: tail \(detected from the recording: 1 episode/);
    expect(chooseComparedGoldOutput(undefined, undefined, log)).toBe('full');
  });
});
