/**
 * What the harness reads through an engine exec is capped in bytes before it reaches this
 * process's memory: an action's output in `intercode` exec mode (one exec per action, as
 * InterCode ran them), and the harness's own short commands (the kill script), whose
 * programs are the sandbox's — an agent can replace `bash` with one that prints without end.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBashEnv } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { DockerSandbox } from '../../src/sandbox/docker/docker-sandbox.js';
import { INTERCODE_EXEC_OUTPUT_BYTES } from '../../src/sandbox/shell/intercode-exec-runner.js';
import { HARNESS_EXEC_OUTPUT_BYTES } from '../../src/sandbox/shell/kill-processes.js';
import { dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'exec output cap'))('output read through an engine exec is capped', () => {
  const envs: BashEnv[] = [];
  /** The size of every exec's output this process received. */
  const received: number[] = [];
  let spy: ReturnType<typeof vi.spyOn>;

  beforeAll(() => {
    requireEngine(engine);
    const exec = DockerSandbox.prototype.exec;
    spy = vi.spyOn(DockerSandbox.prototype, 'exec').mockImplementation(async function (this: DockerSandbox, ...args: Parameters<typeof exec>) {
      const result = await exec.apply(this, args);
      received.push(result.output.length);
      return result;
    });
  });
  afterEach(() => {
    received.length = 0;
  });
  afterAll(async () => {
    spy.mockRestore();
    await Promise.all(envs.map((env) => env.close()));
  });

  it('an action that prints 50 MB in intercode exec mode shows its first 1 MiB, says so, and is killed', async () => {
    const env = await createBashEnv({ execMode: 'intercode', seed: 1 });
    envs.push(env);
    await env.reset({ task: 0 });
    const step = await env.step('yes | head -c 50000000');
    expect(step.observation.length).toBeLessThan(INTERCODE_EXEC_OUTPUT_BYTES + 1000);
    expect(step.observation.startsWith('y\ny\n')).toBe(true);
    expect(step.info.events).toContainEqual({ kind: 'output-limit', shownBytes: INTERCODE_EXEC_OUTPUT_BYTES, totalBytes: expect.any(Number), killed: true });
    expect(Math.max(...received)).toBeLessThanOrEqual(INTERCODE_EXEC_OUTPUT_BYTES);
    // Output under the cap is whole, as InterCode's was.
    expect((await env.step('yes | head -c 200000')).observation).toBe('y\n'.repeat(100_000));
  });

  it("a `bash` replaced by one that prints without end costs the harness's kill script 64 KiB, no more; the episode is cut off, the next is clean", async () => {
    const env = await createBashEnv({ seed: 1, shell: { timeoutMs: 1_000 } });
    envs.push(env);
    await env.reset({ task: 0 });
    expect((await env.step("printf '#!/bin/sh\\nexec yes\\n' > /usr/local/bin/bash && chmod 755 /usr/local/bin/bash && echo planted")).observation).toBe('planted\n');
    // Timed out: the session kills the command's processes with `bash -c <kill script>`, which
    // is now `yes`; no new shell can start either (`bash` again): the episode is cut off.
    const slow = await env.step('sleep 30');
    expect(slow).toMatchObject({ truncated: true, reward: 0, info: { truncation: { reason: 'sandbox-lost' } } });
    expect(received.length).toBeGreaterThan(0);
    expect(Math.max(...received)).toBeLessThanOrEqual(HARNESS_EXEC_OUTPUT_BYTES);
    await env.reset({ task: 0 });
    expect((await env.step('echo after')).observation).toBe('after\n');
  });
});
