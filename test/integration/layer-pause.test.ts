/**
 * Pausing a sandbox for a checkpoint (src/sandbox/docker/layer-archive.ts, pauseRetrying), in
 * a real engine: when a pause is reported failed ("unable to freeze") but froze the container
 * after all, the retry finds it paused (HTTP 409 "is already paused") and the pause is done,
 * instead of failing the checkpoint (seen in test/server/server-fork.test.ts at load 40).
 */
import { workspaceOf } from '../setup/fork-observer.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { pauseRetrying } from '../../src/sandbox/docker/layer-archive.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'layer pause') || gvisorGap('checkpoints pause runc containers'))('pausing a sandbox for a checkpoint', () => {
  let env: BashEnv | undefined;
  afterAll(async () => {
    await env?.close();
  });

  it('a pause reported failed that froze the container after all is taken as done on the retry', async () => {
    const docker = requireEngine(engine);
    [env] = await createBashEnvs({}, 1);
    await env!.reset({ task: 0 });
    const { sandbox } = workspaceOf(env);
    const container = docker.getContainer(sandbox.id);
    let pauses = 0;
    // The engine froze it, but the answer said it had not (as runc's freezer timeout can).
    const reportedFailedOnce = {
      pause: async () => {
        pauses += 1;
        const answer = await container.pause();
        if (pauses === 1) throw new Error('(HTTP code 500) server error - cannot pause container: unable to freeze');
        return answer;
      },
      unpause: () => container.unpause(),
    };
    await pauseRetrying(reportedFailedOnce);
    expect(pauses).toBe(2);
    expect((await container.inspect()).State.Paused).toBe(true);
    await container.unpause();
    expect((await env!.step('echo alive')).observation).toBe('alive\n');
  }, 120_000);
});
