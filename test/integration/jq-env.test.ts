/**
 * The jq env (envs/jq/) against a hostile agent, in real sandboxes. An action is a jq filter,
 * never a shell line nor jq options; the gold's output is taken at reset and kept outside the
 * sandbox, so an agent can neither change what it is compared with nor read it:
 * - shell syntax in a filter runs nothing (no file appears, the document is unchanged);
 * - a filter that looks like an option (`--help`, `-n`) is a filter, not an option;
 * - a document changed after reset (as if an agent could write it) does not move the gold:
 *   the gold's filter, run on the changed document, no longer scores 1;
 * - the gold's output is nowhere in the sandbox's files;
 * - a task without a document or with a failing gold is a DatasetError, never a reward.
 */
import type Docker from 'dockerode';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envPlugin } from '../../envs/index.js';
import type { TaskEnv } from '../../src/env/types.js';
import { DatasetError } from '../../src/errors.js';
import { EngineSet } from '../../src/sandbox/index.js';
import { dockerTestFile, requireEngine, skipWithoutEngine, testContainers } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();
const jq = envPlugin('jq', '--env');
const log = () => undefined;

/** Runs `script` with sh as root in container `id`: its exit code and output. */
async function inContainer(docker: Docker, id: string, script: string): Promise<{ code: number; output: string }> {
  const exec = await docker.getContainer(id).exec({ Cmd: ['sh', '-c', script], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise((resolve) => stream.on('end', resolve));
  return { code: (await exec.inspect()).ExitCode ?? -1, output: Buffer.concat(chunks).toString('latin1') };
}

describe.skipIf(skipWithoutEngine(engine, 'jq env attacks'))('jq env: what a hostile agent cannot do', () => {
  let docker: Docker;
  let engines: EngineSet;
  let env: TaskEnv;
  let dir: string;

  /** The container of the episode under way: the one sandbox holding a document, once the last episode's is removed (off the hot path). */
  async function episodeContainer(): Promise<string> {
    for (let tries = 0; ; tries++) {
      const ids: string[] = [];
      for (const c of await testContainers(docker, testRun, true)) if ((await inContainer(docker, c.Id, 'test -e /jq/input.json').catch(() => ({ code: -1 }))).code === 0) ids.push(c.Id);
      if (ids.length === 1 || tries === 30) {
        expect(ids).toHaveLength(1);
        return ids[0]!;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  const taskIndex = (id: string) => env.tasks.findIndex((t) => t.id === id);

  beforeAll(async () => {
    docker = requireEngine(engine);
    engines = EngineSet.local();
    dir = await mkdtemp(join(tmpdir(), 'intercode-jq-'));
    [env] = await jq.createEnvs({ timeout: '3' }, 1, { purpose: 'run', log, engines });
  }, 300_000);

  afterAll(async () => {
    await env?.close();
    engines?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs no shell syntax written in a filter: no file appears and the document is unchanged', async () => {
    const task = taskIndex('orders-count');
    await env.reset({ task });
    for (const attack of [`'; touch /tmp/pwned; echo '`, '$(touch /tmp/pwned)', '`touch /tmp/pwned`', '"\\(1)" ; echo {} > /jq/input.json', `' > /jq/input.json; echo '`]) {
      const step = await env.step(attack);
      expect(step.terminated || step.truncated).toBe(false);
      expect(step.observation).toMatch(/^jq: error/);
    }
    const container = await episodeContainer();
    expect((await inContainer(docker, container, 'test -e /tmp/pwned')).code).not.toBe(0);
    let reward = 0;
    for (const action of jq.goldActions(env.tasks[task]!)) reward = (await env.step(action)).reward;
    expect(reward).toBe(1);
  }, 120_000);

  it('takes a filter that looks like an option as a filter', async () => {
    await env.reset({ task: 0 });
    for (const attack of ['--help', '-h', '-n', '--rawfile x /etc/hostname']) {
      const step = await env.step(attack);
      expect(step.observation).not.toContain('Usage:');
      expect(step.observation).toMatch(/compile error/);
    }
  }, 120_000);

  it('scores against the gold\'s output taken at reset: a document changed since does not move it', async () => {
    const task = taskIndex('orders-count');
    await env.reset({ task });
    // As if the agent could write the document: every order but one removed.
    const container = await episodeContainer();
    expect((await inContainer(docker, container, `printf '%s' '{"orders":[{"id":1}]}' > /jq/input.json`)).code).toBe(0);
    const [gold, submit] = jq.goldActions(env.tasks[task]!);
    expect((await env.step(gold!)).observation).toBe('1\n');
    const scored = await env.step(submit!);
    expect(scored.reward).toBeLessThan(1);
    expect(scored.info.score?.details.eval_obs).toBe('4\n');
  }, 120_000);

  it('leaves the gold\'s output nowhere in the sandbox\'s files', async () => {
    const task = env.tasks[taskIndex('orders-per-customer')]!;
    await env.reset({ task: task.index });
    // The answer, {"ana":2,"ben":1,"cleo":1}, is not in the document: no file may hold it.
    expect(JSON.stringify(task.metadata.input)).not.toContain('"ana":2');
    const container = await episodeContainer();
    const found = await inContainer(docker, container, `grep -rlF '"ana":2' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; true`);
    expect(found.output.replace(/[^\x20-\x7e\n]/g, '').trim()).toBe('');
    // And the gold still scores 1.
    let reward = 0;
    for (const action of jq.goldActions(task)) reward = (await env.step(action)).reward;
    expect(reward).toBe(1);
  }, 120_000);

  it('ends a filter past --timeout, the episode going on', async () => {
    await env.reset({ task: 0 });
    const step = await env.step('def f: f; f');
    expect(step.observation).toMatch(/timed out after 3 s/);
    expect(step.terminated || step.truncated).toBe(false);
    expect((await env.step('submit')).reward).toBe(0);
  }, 120_000);

  it('refuses a task without its document, before any sandbox, and a gold that fails, at reset', async () => {
    const noInput = join(dir, 'no-input.json');
    await writeFile(noInput, JSON.stringify([{ query: 'q', gold: '.' }]));
    const nowhere = new EngineSet([{ endpoint: `unix://${join(dir, 'no-engine.sock')}`, weight: 1 }]);
    await expect(jq.createEnvs({ data: noInput }, 1, { purpose: 'run', log, engines: nowhere })).rejects.toThrow(/record 1, field "input": missing/);
    nowhere.close();

    const badGold = join(dir, 'bad-gold.json');
    await writeFile(badGold, JSON.stringify([{ query: 'q', gold: '.a.b', input: { a: [1] } }]));
    const [bad] = await jq.createEnvs({ data: badGold }, 1, { purpose: 'run', log, engines });
    try {
      const error = await bad!.reset({ task: 0 }).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(DatasetError);
      expect(String(error)).toMatch(/record 1, field "gold": jq failed: jq: error/);
    } finally {
      await bad!.close();
    }
  }, 120_000);
});
