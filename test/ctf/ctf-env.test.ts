/**
 * The CTF environment end to end in Docker sandboxes, on the built-in tasks: files at
 * /ctf/<task_id>/ and nothing else of the task set (no solution/, no other task), flag
 * submission in both wrong-flag modes, quotes and spaces in flags, episode isolation,
 * every built-in reference solver run in the sandbox, and replay of a CTF-style recording.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BUILTIN_CTF_ASSETS,
  CORRECT_FLAG,
  createCtfEnvs,
  ctfRecipe,
  INCORRECT_FLAG,
  type CtfEnv,
} from '../../envs/ctf/index.js';
import type { Task } from '../../src/datasets/index.js';
import { EpisodeScheduler } from '../../src/scheduler/index.js';
import { EnvStateError } from '../../src/errors.js';
import { detectProtocol, replayTrajectories } from '../../src/replay/replay.js';
import { readRecordedTrajectories } from '../../src/trajectory/index.js';
import { buildImageUnlabelled, dockerTestFile, requireEngine, skipWithoutEngine, writeTree } from '../setup/docker.js';
import { runSolvers, solverFiles } from './solvers.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'ctf env'))('CTF env in Docker', () => {
  let env: CtfEnv;
  let ending: CtfEnv;
  let tasks: readonly Task[];

  beforeAll(async () => {
    await buildImageUnlabelled(requireEngine(engine), await ctfRecipe());
    [env] = (await createCtfEnvs({}, 1)) as [CtfEnv];
    [ending] = (await createCtfEnvs({ wrongFlag: 'end' }, 1)) as [CtfEnv];
    tasks = env.tasks;
  });
  afterAll(async () => {
    await env?.close();
    await ending?.close();
  });

  const run = async (action: string) => (await env.step(action)).observation;

  it('starts in /ctf/<task_id> holding exactly the task files, without solution/ or other tasks', async () => {
    const task = tasks[6]!;
    const { observation } = await env.reset({ task });
    expect(observation).toBe(task.query);
    expect(await run('pwd')).toBe(`/ctf/${task.id}\n`);
    expect(await run('ls -A /ctf')).toBe(`${task.id}\n`);
    expect(await run('ls -A')).toBe('checker\n');
    expect(await run('find / -xdev \\( -name solution -o -name solve.sh -o -name checker.c -o -name "ic_ctf.json" \\) 2>/dev/null | head')).toBe('');
    const everyFlag = tasks.map((t) => String(t.gold));
    const grep = await run(`grep -rlaF ${everyFlag.map((f) => `-e '${f}'`).join(' ')} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null | head`);
    expect(grep).toBe('');
  });

  it('scores the gold flag 1 in any case and ends the episode', async () => {
    const task = tasks[0]!;
    await env.reset({ task });
    const result = await env.step(`submit ${String(task.gold).toUpperCase()}`);
    expect(result).toMatchObject({ reward: 1, terminated: true, truncated: false, observation: CORRECT_FLAG });
    expect(result.info.score?.details.agent_obs).toBe(String(task.gold).toUpperCase());
    await expect(env.step('ls')).rejects.toBeInstanceOf(EnvStateError);
  });

  it('continue mode: a wrong flag answers that it is incorrect and the episode goes on', async () => {
    const task = tasks[1]!;
    await env.reset({ task });
    const wrong = await env.step('submit flag{not_it}');
    expect(wrong).toMatchObject({ reward: 0, terminated: false, truncated: false, observation: INCORRECT_FLAG });
    expect(await env.peekScore()).toMatchObject({ reward: 0 });
    const solved = await run("rev note.txt | tr 'A-Za-z' 'N-ZA-Mn-za-m'");
    expect(solved.trim()).toBe(task.gold);
    expect(await env.step(`submit ${solved.trim()}`)).toMatchObject({ reward: 1, terminated: true });
  });

  it('end mode: a wrong flag ends the episode with reward 0', async () => {
    await ending.reset({ task: tasks[2]! });
    expect(await ending.step('submit flag{wrong}')).toMatchObject({ reward: 0, terminated: true, observation: INCORRECT_FLAG });
    await expect(ending.step('ls')).rejects.toBeInstanceOf(EnvStateError);
    await ending.reset({ task: tasks[2]! });
    expect(await ending.step('submit')).toMatchObject({ reward: 0, terminated: true });
  });

  it('keeps quotes and spaces inside a submitted flag', async () => {
    const gold = `flag{it's "a b"  c}`;
    const task: Task = { index: 0, id: 'quoted', query: 'Submit the quoted flag.', gold, metadata: {} };
    await env.reset({ task });
    expect(await run('pwd; ls -A')).toBe('/ctf/quoted\n');
    expect(await env.step(`submit flag{it's "a b" c}`)).toMatchObject({ reward: 0, terminated: false });
    expect(await env.step(`submit   FLAG{IT'S "A B"  C}  `)).toMatchObject({ reward: 1, terminated: true });
  });

  it('skip ends with 0; submitting before reset is an error', async () => {
    const [fresh] = await createCtfEnvs({}, 1);
    await expect(fresh!.step('submit flag{x}')).rejects.toBeInstanceOf(EnvStateError);
    await fresh!.close();
    await env.reset({ task: tasks[3]! });
    expect(await env.step('skip')).toMatchObject({ reward: 0, terminated: true });
  });

  it('tool mode: a shell in /ctf, and a submission ends the episode with 0', async () => {
    const [tool] = await createCtfEnvs({ data: null }, 1);
    try {
      expect(await tool!.reset()).toEqual({ observation: '', info: { task: null, disk: { limitBytes: 2 * 1024 ** 3, enforcement: expect.stringMatching(/^(engine|watched|file-size)$/) } } });
      expect((await tool!.step('pwd; ls -A')).observation).toBe('/ctf\n');
      expect(await tool!.step('submit flag{x}')).toMatchObject({ reward: 0, terminated: true });
    } finally {
      await tool!.close();
    }
  });

  it('gives each episode a fresh sandbox', async () => {
    await env.reset({ task: tasks[3]! });
    await run('echo left > /ctf/3/left-behind; rm secret.bin; touch /tmp/marker');
    await env.reset({ task: tasks[3]! });
    expect(await run('ls -A /ctf/3; ls /tmp/marker')).toBe("secret.bin\nls: cannot access '/tmp/marker': No such file or directory\n");
  });

  it('on the episode scheduler\'s warm pool: each episode finds what a fresh sandbox shows, its own task\'s files and none of the last episode\'s', async () => {
    // Two envs and no spare. Every CTF episode writes its task's files, so no sandbox is restored
    // in place (docs/fidelity.md): each episode gets a new one.
    const jobs = [3, 6, 1, 3, 6, 1].map((i) => tasks[i]!);
    const play = async (scheduler: EpisodeScheduler) => {
      const seen = new Map<number, string>();
      try {
        await scheduler.forEach(jobs.map((task, k) => ({ task, k })), async (slot, { task, k }) => {
          await slot.reset({ task });
          // The last episode's `sleep 300` must be gone (a process count would also count a
          // new sandbox's shells while they start, which differs from moment to moment).
          const look = await slot.step('pwd; echo "${OLDPWD-unset}"; ls -A /ctf; ls -lA; ls -A /tmp; echo "sleep 300: $(ps -e -o args= | grep -c \'^sleep 300\')"');
          seen.set(k, look.observation);
          await slot.step(`echo junk > /ctf/${task.id}/junk; chmod 700 .; mkdir /ctf/other; touch /tmp/left; sleep 300 & cd /`);
          await slot.step('skip');
        });
      } finally {
        await scheduler.close();
      }
      return [...seen].sort(([a], [b]) => a - b).map(([, look]) => look);
    };
    const pooledEngine = new EpisodeScheduler(await createCtfEnvs({}, 2), { pool: { pool: { minIdle: 0 } } });
    expect(pooledEngine.mode).toBe('pooled');
    const pooled = await play(pooledEngine);
    expect(pooledEngine.stats()!.restored).toBe(0);
    expect(pooledEngine.stats()!.created).toBeGreaterThanOrEqual(jobs.length);
    const fresh = await play(new EpisodeScheduler(await createCtfEnvs({}, 2), { sandboxes: 'fresh' }));
    const timeless = (looks: string[]) => looks.map((look) => look.replace(/ [A-Z][a-z]{2} [ \d]\d \d\d:\d\d /g, ' <time> '));
    expect(timeless(pooled)).toEqual(timeless(fresh));
    expect(pooled.join('')).not.toMatch(/junk|other|left|drwx------/);
    expect(pooled[0]).toMatch(/^\/ctf\/3\n/);
    for (const look of pooled) expect(look).toContain('sleep 300: 0\n');
  }, 300_000);

  it('every built-in reference solver prints its flag in the sandbox', async () => {
    const found: string[] = [];
    for (const task of tasks) {
      const files = solverFiles(BUILTIN_CTF_ASSETS, task.id);
      expect(files).toEqual(['solve.sh']);
      await env.reset({ task });
      const [solver] = await runSolvers(env, task, BUILTIN_CTF_ASSETS, files);
      if (solver?.foundFrom === 'task') found.push(task.id);
      else console.error(`task ${task.id}: ${solver?.output}`);
    }
    expect(found).toEqual(tasks.map((t) => t.id));
  }, 300_000);

  it('replays a CTF recording: only flag submissions carry a reward, a wrong flag goes on', async () => {
    const dir = await writeTree({}, 'intercode-ctf-replay-');
    try {
      const [a, b] = [tasks[0]!, tasks[3]!];
      const recorded = {
        0: {
          query: a.query,
          turn_history: {
            actions: ['ls', 'submit flag{guess}', 'xxd -r -p message.txt | base64 -d | base64 -d | base64 -d', `submit ${String(a.gold)}`],
            observations: ['message.txt\n', INCORRECT_FLAG, String(a.gold), CORRECT_FLAG],
            rewards: [0, 0, 0, 1],
            valid_action: [true, true, true, true],
          },
          summary: { max_reward: 1, turns_taken: 4 },
        },
        3: {
          query: b.query,
          turn_history: {
            actions: ['cat secret.bin | xxd', 'submit flag{wrong} and more', 'skip'],
            observations: ['', INCORRECT_FLAG, 'skipped'],
            rewards: [0, 0, 0],
            valid_action: [true, true, true],
          },
          summary: { max_reward: 0, turns_taken: 3 },
        },
      };
      const file = join(dir, 'ic_ctf_recorded.json');
      await writeFile(file, JSON.stringify(recorded));
      const episodes = await readRecordedTrajectories(file);
      expect(detectProtocol(episodes)).toBe('on-flag');
      const report = await replayTrajectories({ protocol: 'on-flag', envs: [env], tasks, episodes });
      expect(report).toMatchObject({ episodes: 2, steps: 7, agreeingSteps: 7, agreement: 1, successRate: 0.5, recordedSuccessRate: 0.5 });
      expect(report.sameObservationSteps).toBeGreaterThanOrEqual(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
