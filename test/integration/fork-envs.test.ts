/**
 * Checkpoint and fork a live CTF and task-directory episode (issue 29), in a real engine: the
 * observer set prints the same in the parent at checkpoint time and in every child (as in
 * fork.test.ts), the agent's shell state and the env's own episode state (CTF: the flag
 * submitted; task directories: the agent time left) follow the handle, children are
 * independent, a child playing the parent's actions gets the parent's reward, and a
 * checkpoint is refused (typed) by an env that would score it against another image or task.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtfEnvs, ctfRecipe, INCORRECT_FLAG, type CtfEnv } from '../../envs/ctf/index.js';
import { createTaskEnvs, type TaskDirEnv } from '../../envs/task/index.js';
import { taskPlugin } from '../../envs/task/plugin.js';
import type { SandboxEnv } from '../../src/env/sandbox-env.js';
import { CheckpointError } from '../../src/errors.js';
import { packagePath } from '../../src/package-path.js';
import { buildImageUnlabelled, dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { CONTROL_CHANGE, comparable, differences, differencesAfterControlChange, observeEnv } from '../setup/fork-observer.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'fork of ctf and task envs') || gvisorGap('checkpoints read the writable layer on the host: overlay2 and runc only');
const FIXTURES = packagePath('test', 'fixtures', 'harbor-tasks');

/**
 * Each child answers the observers as the parent did after `fork`, and a write in one child is
 * seen nowhere else; the negative control: the same comparison flags one file's mtime changed
 * in the last child.
 */
async function expectExactAndIndependent(parent: SandboxEnv, children: readonly SandboxEnv[], probe: string): Promise<void> {
  const parentSeen = comparable(await observeEnv(parent));
  const parentProbe = (await parent.step(probe)).observation;
  for (const child of children) {
    expect(child.currentTask).toBe(parent.currentTask);
    expect(differences(parentSeen, comparable(await observeEnv(child)))).toEqual([]);
    expect((await child.step(probe)).observation).toBe(parentProbe);
  }
  const flagged = await differencesAfterControlChange(parentSeen, children.at(-1)!);
  expect(flagged.some((line) => line.startsWith(`- find\t${CONTROL_CHANGE.path}\t`)), flagged.join('\n')).toBe(true);
  await children[0]!.step('echo mine > /tmp/only-in-child-0');
  for (const other of [parent, ...children.slice(1)]) expect((await other.step('ls /tmp/only-in-child-0 2>&1; true')).observation).toMatch(/No such file/);
}

/** A refusal's reason, or the error itself when it is not a CheckpointError. */
const refusalOf = (promise: Promise<unknown>) => promise.then(() => 'restored', (error: unknown) => (error instanceof CheckpointError ? `${error.code} ${String(error.details['reason'])}` : error));

describe.skipIf(skip)('checkpoint and fork a live CTF episode', () => {
  let env: CtfEnv;
  beforeAll(async () => {
    await buildImageUnlabelled(requireEngine(engine), await ctfRecipe());
    [env] = (await createCtfEnvs({}, 1)) as [CtfEnv];
  }, 600_000);
  afterAll(async () => {
    await env?.close();
  });

  it('fork(2) mid-episode: files, shell and the wrong flag submitted follow; children independent; rewards equal the parent\'s', async () => {
    const task = env.tasks[0]!;
    await env.reset({ task });
    await env.step('mkdir notes && cd notes && echo "try 1" > tried.txt && export TRIED=1 && shopt -s nullglob');
    expect((await env.step('submit flag{not-it}')).observation).toBe(INCORRECT_FLAG);
    const parentPeek = await env.peekScore();
    expect(parentPeek.details['agent_obs']).toBe('flag{not-it}');
    const children = (await env.fork(2)) as CtfEnv[];
    try {
      expect(children.map((child) => child.id)).toEqual([env.id, env.id]);
      for (const child of children) expect(await child.peekScore()).toEqual(parentPeek);
      await expectExactAndIndependent(env, children, 'echo "$PWD $TRIED $(cat tried.txt) $(shopt -p nullglob)"; ls -A /ctf');
      // The same actions, the same reward: the gold flag in the parent and a child, a wrong one in the other.
      const gold = `submit ${String(task.gold)}`;
      const parent = await env.step(gold);
      expect(parent).toMatchObject({ reward: 1, terminated: true });
      expect(await children[0]!.step(gold)).toMatchObject({ reward: parent.reward, terminated: true, observation: parent.observation });
      expect(await children[1]!.step('submit flag{still-not}')).toMatchObject({ reward: 0, terminated: false, observation: INCORRECT_FLAG });
    } finally {
      await Promise.all(children.map((child) => child.close()));
    }
  }, 600_000);

  it('a CTF env of another image refuses the checkpoint (typed), before making a sandbox', async () => {
    await env.reset({ task: 0 });
    const checkpoint = await env.checkpoint();
    const config = (env as unknown as { config: ConstructorParameters<typeof CtfEnv>[0] }).config;
    const other = new (env.constructor as typeof CtfEnv)({ ...config, spec: { ...config.spec, image: 'intercode-ts/ctf:another' } });
    try {
      expect(await refusalOf(other.restore(checkpoint))).toBe('CHECKPOINT_REFUSED other-image');
    } finally {
      await other.close();
      env.releaseCheckpoint(checkpoint);
    }
  }, 300_000);
});

describe.skipIf(skip)('checkpoint and fork a live task-directory episode', () => {
  let env: TaskDirEnv;
  let failing: TaskDirEnv;
  beforeAll(async () => {
    requireEngine(engine);
    [env] = await createTaskEnvs({ data: join(FIXTURES, 'own'), keepWarmMs: 0 }, 1);
    [failing] = await createTaskEnvs({ data: join(FIXTURES, 'failing'), keepWarmMs: 0 }, 1);
  }, 600_000);
  afterAll(async () => {
    await env?.close();
    await failing?.close();
  });

  it('fork(2) mid-episode: files, shell and agent time left follow; children independent; the verifier\'s reward equals the parent\'s', async () => {
    const task = env.tasks.find((t) => t.id === 'hello-txt')!;
    await env.reset({ task });
    await env.step('echo draft > /app/draft.txt && cd /tmp && export STAGE=two && umask 077');
    const checkpoint = await env.checkpoint();
    const left = checkpoint.state.envEpisode['agentTimeLeftMs'];
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(120_000);
    expect(checkpoint.state.envEpisode['agentLimitSec']).toBe(120);
    env.releaseCheckpoint(checkpoint);
    const children = (await env.fork(2)) as TaskDirEnv[];
    try {
      await expectExactAndIndependent(env, children, 'echo "$PWD $STAGE $(umask) $(cat /app/draft.txt)"');
      // The same actions (the oracle's), the same verifier reward; a wrong answer in the other child scores 0.
      const gold = taskPlugin.goldActions(task).slice(0, -1);
      const play = async (target: TaskDirEnv, actions: readonly string[]) => {
        for (const action of actions) await target.step(action);
        return target.step('submit');
      };
      const parent = await play(env, gold);
      expect(parent).toMatchObject({ reward: 1, terminated: true, truncated: false });
      const child = await play(children[0]!, gold);
      expect(child).toMatchObject({ reward: parent.reward, terminated: true, truncated: false });
      expect(child.info.score?.parts).toEqual(parent.info.score?.parts);
      expect(await play(children[1]!, ['echo "Hello world" > /app/hello.txt'])).toMatchObject({ reward: 0, terminated: true, truncated: false });
    } finally {
      await Promise.all(children.map((child) => child.close()));
    }
  }, 900_000);

  it('an env without the checkpoint\'s task directory refuses it (typed)', async () => {
    await env.reset({ task: env.tasks.find((t) => t.id === 'hello-txt')! });
    const checkpoint = await env.checkpoint();
    try {
      expect(await refusalOf(failing.restore(checkpoint))).toBe('CHECKPOINT_REFUSED other-task');
    } finally {
      env.releaseCheckpoint(checkpoint);
      await env.step('skip');
    }
  }, 300_000);

  it('a child has the agent time the parent had left, not the task\'s whole limit', async () => {
    const [limited] = await createTaskEnvs({ data: join(FIXTURES, 'limits', 'agent-timeout'), keepWarmMs: 0 }, 1);
    try {
      await limited!.reset({ task: 0 });
      expect((await limited!.step('echo done > /app/out.txt')).terminated).toBe(false);
      // 4 s in all: about 1.5 s are left when the fork is made.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const [child] = (await limited!.fork(1)) as TaskDirEnv[];
      try {
        // 2 s after the restore: past the time left, well within a whole new limit.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const step = await child!.step('echo late > /app/out.txt');
        expect(step).toMatchObject({ reward: 1, terminated: true, truncated: false });
        expect(step.info.score?.details).toMatchObject({ agentTimeout: { limitSec: 4 } });
      } finally {
        await child!.close();
      }
    } finally {
      await limited!.close();
    }
  }, 600_000);
});
