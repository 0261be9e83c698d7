import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../setup/temp-dirs.js';
import { TrajectoryError } from '../../src/errors.js';
import { ReplayBuffer } from '../../training/buffer/replay-buffer.js';
import { demoTransitions, formatDemoLine, loadDemos, parseDemos, type DemoEpisode } from '../../training/demos/demo-episode.js';
import { CommandRetriever } from '../../training/corpus/command-retriever.js';
import { CandidateSet } from '../../training/scorer/candidates.js';
import { candidateFeatures, stateFeatures } from '../../training/scorer/features.js';
import { renderLearningCurves } from '../../training/plot/learning-curves.js';
import type { MetricRecord } from '../../training/run/run-files.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { sqlPlugin } from '../../envs/sql/plugin.js';

const demo: DemoEpisode = {
  env: 'bash',
  task_id: '3',
  query: 'Count the "ERROR" lines\nin app.log',
  actions: ['grep -c ERROR /testbed/logs/app.log', 'submit'],
  observations: ['4\n', '4\n'],
  rewards: [0, 1],
  reward: 1,
  terminated: true,
  truncated: false,
  policy: 'gold',
};

describe('JSONL demonstrations', () => {
  it('writes one episode per line with float rewards, and reads it back', () => {
    const line = formatDemoLine(demo);
    expect(line).not.toContain('\n');
    expect(line).toContain('"rewards":[0.0,1.0],"reward":1.0');
    expect(parseDemos(`${line}\n\n${formatDemoLine({ ...demo, task_id: '4', rewards: [0, 0.33], reward: 0.33 })}\n`, 'x.jsonl')).toEqual([demo, { ...demo, task_id: '4', rewards: [0, 0.33], reward: 0.33 }]);
  });

  it('names the file, line and field of a bad episode', () => {
    const bad = JSON.stringify({ ...demo, rewards: [0] });
    expect(() => parseDemos(`${formatDemoLine(demo)}\n${bad}\n`, 'd.jsonl')).toThrow(TrajectoryError);
    expect(() => parseDemos(`${formatDemoLine(demo)}\n${bad}\n`, 'd.jsonl')).toThrow('d.jsonl, line 2, field "rewards": has 1 entries for 2 actions');
    expect(() => parseDemos('{"env":', 'e.jsonl')).toThrow(/e.jsonl, line 1: malformed JSON/);
  });

  it('loads the complete episodes of a replay-buffer folder as demonstrations', () => {
    const dir = tempDir('demos-');
    const { buffer } = ReplayBuffer.open(dir, { capacity: 100 });
    buffer.addMany(demoTransitions(demo, 'a'));
    buffer.addMany(demoTransitions({ ...demo, task_id: '9' }, 'b').slice(0, 1));
    buffer.close();
    expect(loadDemos(dir)).toEqual([demo]);
    const file = join(dir, 'x.jsonl');
    writeFileSync(file, `${formatDemoLine(demo)}\n`);
    expect(loadDemos(file)).toEqual([demo]);
  });

  it('turns an episode into self-contained transitions', () => {
    const [first, second] = demoTransitions(demo, 'e');
    expect(first).toMatchObject({ step: 0, observation: demo.query, previousAction: '', nextObservation: '4\n', terminated: false });
    expect(second).toMatchObject({ step: 1, observation: '4\n', previousAction: demo.actions[0], action: 'submit', reward: 1, terminated: true });
  });
});

describe('features and candidates', () => {
  it('hashes different words of the same shape apart, and the same text alike', () => {
    const a = stateFeatures({ query: 'sort the notes', observation: '', previousAction: '', step: 0 }, 4096);
    const b = stateFeatures({ query: 'sort the tests', observation: '', previousAction: '', step: 0 }, 4096);
    expect(a).not.toEqual(b);
    expect(candidateFeatures('ls -la', 64)).toEqual(candidateFeatures('ls -la', 64));
  });

  it('offers harvested actions, submit and exploration, plus cat of files the last output listed', () => {
    const set = new CandidateSet(['wc -l a', 'submit'], bashPlugin.training.exploration);
    const state = (observation: string, step: number) => ({ query: 'query', observation, previousAction: step ? 'ls' : '', step });
    expect(set.forState(state('query', 0))).toEqual(['wc -l a', 'submit', 'ls', 'ls -la /testbed', 'find /testbed -maxdepth 2', 'pwd']);
    expect(set.forState(state('/testbed/a.txt\n/testbed/dir\n', 1))).toContain('cat /testbed/a.txt');
    expect(set.forState(state('/testbed/a.txt\n/testbed/dir\n', 1))).not.toContain('cat /testbed/dir');
    expect(new CandidateSet([], sqlPlugin.training.exploration).forState(state("[('users',), ('orders',)]", 1))).toEqual(['submit', 'SHOW TABLES', 'DESCRIBE users', 'DESCRIBE orders']);
  });

  it('adds the retrieved commands, adapted to the query, and to the path the last output showed', () => {
    const retriever = new CommandRetriever([
      { description: 'count the lines of notes.txt', command: 'wc -l notes.txt' },
      { description: 'show the disk usage of a folder', command: 'du -sh /home/me' },
    ]);
    const set = new CandidateSet(['submit'], bashPlugin.training.exploration, { retriever, perState: 1 });
    const query = 'count the lines of todo.txt in /testbed';
    expect(set.forState({ query, observation: query, previousAction: '', step: 0 })).toEqual(['submit', 'ls', 'ls -la /testbed', 'find /testbed -maxdepth 2', 'pwd', 'wc -l todo.txt']);
    expect(set.retrieved({ query, observation: '/testbed/dir1/todo.txt', previousAction: 'find /testbed', step: 1 })).toEqual(['wc -l /testbed/dir1/todo.txt']);
  });
});

describe('learning curves', () => {
  it('renders a self-contained page with one point per recorded value', () => {
    const metrics: MetricRecord[] = [
      { iteration: 0, phase: 'baseline', successRate: 0.1, meanReward: 0.2, heldOutSuccessRate: 0, heldOutMeanReward: 0.1, envStepsPerSec: 3, elapsedSec: 1 },
      { iteration: 1, phase: 'bc', loss: 2, accuracy: 0.5, elapsedSec: 2 },
      { iteration: 2, phase: 'bc', loss: 1, accuracy: 0.9, elapsedSec: 3 },
      { iteration: 3, phase: 'eval', successRate: 1, meanReward: 1, heldOutSuccessRate: 0.25, heldOutMeanReward: 0.5, envStepsPerSec: 4, elapsedSec: 4 },
      { iteration: 4, phase: 'pg', loss: 0.3, successRate: 0.9, meanReward: 0.95, envStepsPerSec: 5, elapsedSec: 5 },
    ];
    const html = renderLearningCurves('run <1>', metrics);
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).not.toMatch(/<script|https?:\/\//);
    expect(html).toContain('run &lt;1&gt;');
    expect(html.match(/<svg /g)).toHaveLength(5);
    // loss 3 + success 5 + reward 5 + steps/s 3 + accuracy 2
    expect(html.match(/<circle /g)).toHaveLength(18);
    expect(html).toContain('<td>10.0 %</td><td>0.0 %</td>');
    expect(html).toContain('<td>100.0 %</td><td>25.0 %</td>');
  });
});
