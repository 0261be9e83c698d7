/**
 * The episode driver over real bash sandboxes, as `intercode eval`/`collect`/`train` use it:
 * vecEnvFor gives the bash envs one warm pool whose used sandboxes are restored in place, so
 * more episodes run than sandboxes are made, each in a clean one, and gold episodes score 1.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { GoldPolicy } from '../../src/policy/index.js';
import { vecEnvFor } from '../../src/vec/index.js';
import { VecEpisodeRunner } from '../../training/loops/episode-runner.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'episode driver in bash sandboxes'))('episode driver over pooled bash envs', () => {
  let envs: BashEnv[];
  beforeAll(async () => {
    requireEngine(engine);
    envs = await createBashEnvs({}, 2);
  });

  it('plays gold episodes to reward 1 in clean sandboxes reused in place', async () => {
    const runner = new VecEpisodeRunner('bash', vecEnvFor(envs, { autoreset: 'disabled' }));
    try {
      // Marking episodes count the marks they find, leave one and read the container's name;
      // gold episodes read the name and play the gold, which scores 1 only in a clean sandbox.
      const HOST = 'hostname';
      const marking = new GoldPolicy(() => [`ls /tmp/mark-* 2>/dev/null | wc -l; touch /tmp/mark-$RANDOM; ${HOST}`, 'submit']);
      const gold = new GoldPolicy(({ task }) => [HOST, String(task.gold), 'submit']);
      const tasks = envs[0]!.tasks.slice(0, 6);
      const jobs = tasks.flatMap((task) => [{ task, policy: marking }, { task, policy: gold }]);
      const rollouts = await runner.play(jobs, { turnLimit: 3 });
      expect(rollouts.map((r) => r.task.id)).toEqual(jobs.map((j) => j.task.id));
      const golds = rollouts.filter((_, i) => i % 2 === 1);
      const marks = rollouts.filter((_, i) => i % 2 === 0);
      expect(golds.map((r) => r.reward)).toEqual(golds.map(() => 1));
      // No earlier episode's mark is ever seen.
      expect(new Set(marks.map((r) => r.turns[0]!.observation.trim().split('\n')[0]))).toEqual(new Set(['0']));
      // Two envs with two spares: at most 4 sandboxes of episodes, so the 12 episodes reused some.
      const hosts = rollouts.map((r) => r.turns[0]!.observation.trim().split('\n').at(-1));
      expect(new Set(hosts).size).toBeLessThanOrEqual(4);
    } finally {
      await runner.close();
    }
  });
});
