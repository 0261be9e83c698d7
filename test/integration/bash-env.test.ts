/**
 * The bash environment end to end in Docker sandboxes: createBashEnv with the built-in
 * tasks and testbed (or, where they do not exist, a small task file and testbed written to
 * a temporary directory), reset/step/submit/skip, the InterCode reward on real sandboxes,
 * episode isolation, tool mode, trajectory logs, and a sandbox lost mid-episode.
 */
import type Docker from 'dockerode';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS, createBashEnv, type BashEnvOptions } from '../../envs/bash/index.js';
import { BUILTIN_TESTBED } from '../../envs/bash/images.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { writeEpisodeLogs } from '../../src/env/episode-log-writer.js';
import { EnvStateError } from '../../src/errors.js';
import type { EpisodeLog } from '../../src/trajectory/index.js';
import {
  bashTestbedImage,
  dockerTestFile,
  FALLBACK_TESTBED_FILES,
  requireEngine,
  skipWithoutEngine,
  testContainers,
  writeTree,
  testEngines,
} from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();

/** Golds of the tasks these tests use; all are in the built-in task set. */
const GOLD = {
  readOnly: 'grep -c ERROR /testbed/logs/app.log',
  /** Adds one file: `?? testbed/data/archive/readings-2022-12.csv`; prints nothing. */
  addsFile: 'gzip -dk /testbed/data/archive/readings-2022-12.csv.gz',
  /** Adds a folder: `?? testbed/reports/`; prints nothing. */
  addsFolder: 'mkdir -p /testbed/reports && grep ERROR /testbed/logs/app.log > /testbed/reports/errors.txt',
};

/** Built-in tasks and testbed when they exist; otherwise a task file and testbed in a temporary directory. */
async function bashFixture(): Promise<{ options: Partial<BashEnvOptions>; remove(): Promise<void> }> {
  if (existsSync(BUILTIN_BASH_TASKS) && existsSync(BUILTIN_TESTBED)) return { options: {}, remove: async () => undefined };
  const testbed = await writeTree(FALLBACK_TESTBED_FILES);
  const tasks = Object.entries(GOLD).map(([name, gold]) => ({ query: `Task ${name}: do what the gold does.`, gold }));
  const dataDir = await writeTree({ 'tasks.json': JSON.stringify(tasks, null, 2) }, 'intercode-tasks-');
  return {
    options: { data: join(dataDir, 'tasks.json'), testbed },
    remove: async () => {
      await rm(testbed, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A fingerprint of the testbed and the system folders: every path with its type, mode
 * and size under /testbed, /etc, /root and /usr, and the md5 of every file under
 * /testbed, /etc and /root.
 */
const FINGERPRINT =
  "{ find /testbed /etc /root /usr -xdev -printf '%p %y %m %s\\n' | sort; " +
  'find /testbed /etc /root -xdev -type f -exec md5sum {} + | sort; } 2>&1 | md5sum';

describe.skipIf(skipWithoutEngine(engine, 'BashEnv integration tests'))('BashEnv in Docker sandboxes', () => {
  let docker: Docker;
  let fixture: Awaited<ReturnType<typeof bashFixture>>;
  let env: BashEnv;
  const envs: BashEnv[] = [];
  const tempDirs: string[] = [];

  async function newEnv(options: Partial<BashEnvOptions> = {}): Promise<BashEnv> {
    const created = await createBashEnv({ ...fixture.options, seed: 7, engines: testEngines(), ...options });
    envs.push(created);
    return created;
  }

  function taskIndex(gold: string): number {
    const index = env.tasks.findIndex((task) => task.gold === gold);
    expect(index, `a task with gold ${gold}`).toBeGreaterThanOrEqual(0);
    return index;
  }

  beforeAll(async () => {
    docker = requireEngine(engine);
    fixture = await bashFixture();
    await bashTestbedImage(docker, fixture.options.testbed); // so createBashEnv finds it built, unlabelled
    // The fingerprint walks /usr: under gVisor on a loaded host that is past the 10 s default.
    env = await newEnv({ shell: { timeoutMs: 60_000 } });
  });

  afterAll(async () => {
    await Promise.all(envs.map((e) => e.close()));
    await fixture?.remove();
    await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('reset shows the task query', async () => {
    const index = taskIndex(GOLD.readOnly);
    const reset = await env.reset({ task: index });
    expect(reset.observation).toBe(env.tasks[index]!.query);
    expect(reset.info.task).toEqual(env.tasks[index]);
    expect(env.currentTask).toEqual(env.tasks[index]);
  });

  it("the default image is Debian's slim variant: no manuals or translations, documentation only as copyright files, and dpkg keeps them out", async () => {
    await env.reset({ task: taskIndex(GOLD.readOnly) });
    const probe = 'ls /usr/share/man /usr/share/locale | grep -vc -e : -e locale.alias -e "^$"; find /usr/share/doc -type f ! -name copyright | wc -l; grep -c "^path-exclude /usr/share/man/\\*$" /etc/dpkg/dpkg.cfg.d/docker';
    expect((await env.step(probe)).observation).toBe('0\n0\n1\n');
  });

  it('step returns the output with reward 0, not ended, and what ran in info', async () => {
    await env.reset({ task: taskIndex(GOLD.readOnly) });
    const ok = await env.step('echo hello; cd /testbed');
    expect(ok).toMatchObject({ observation: 'hello\n', reward: 0, terminated: false, truncated: false });
    expect(ok.info).toMatchObject({ actionExecuted: true, exitCode: 0, events: [] });
    expect(ok.info.durationMs).toBeGreaterThan(0);
    const failed = await env.step('ls does-not-exist');
    expect(failed.observation).toBe("ls: cannot access 'does-not-exist': No such file or directory\n");
    expect(failed).toMatchObject({ reward: 0, terminated: false, truncated: false });
    expect(failed.info).toMatchObject({ actionExecuted: false, exitCode: 2 });
  });

  it('submitting after the gold scores 1.0: every part full', async () => {
    await env.reset({ task: taskIndex(GOLD.readOnly) });
    const gold = await env.step(GOLD.readOnly);
    expect(gold.observation).toMatch(/^\d+\n$/);
    const submit = await env.step('submit');
    expect(submit).toMatchObject({ reward: 1, terminated: true, truncated: false });
    expect(submit.info.score?.parts).toEqual({ file_diff: 0.33, file_changes: 0.33, answer_similarity: 0.33 });
    expect(submit.info.score?.details).toMatchObject({ diff_miss: [], diff_extra: [], agent_obs: gold.observation, eval_obs: gold.observation });
  });

  it('skip ends the episode with reward 0; a step after the end throws EnvStateError', async () => {
    await env.reset({ task: taskIndex(GOLD.readOnly) });
    const skip = await env.step('skip');
    expect(skip).toMatchObject({ reward: 0, terminated: true, truncated: false });
    expect(skip.info.score).toEqual({ reward: 0, parts: {}, details: { skipped: true } });
    await expect(env.step('echo again')).rejects.toBeInstanceOf(EnvStateError);
    await expect(env.step('submit')).rejects.toThrow('step() called after the episode ended; call reset()');
  });

  it('step before any reset throws EnvStateError', async () => {
    const fresh = await newEnv({ data: null });
    await expect(fresh.step('echo hi')).rejects.toBeInstanceOf(EnvStateError);
  });

  it('reset restores the testbed and the system folders exactly', async () => {
    await env.reset({ task: taskIndex(GOLD.readOnly) });
    const before = (await env.step(FINGERPRINT)).observation;
    expect(before).toMatch(/^[0-9a-f]{32} {2}-\n$/);
    const vandal = await env.step(
      'rm -rf /testbed/src /etc/debian_version && echo new > /testbed/new.txt && echo evil > /etc/evil.conf && ' +
        'mkdir /root/junk && touch /usr/local/bin/tool && chmod 000 /testbed/LICENSE && echo more >> /testbed/README.md',
    );
    expect(vandal.info.exitCode).toBe(0);
    expect((await env.step(FINGERPRINT)).observation).not.toBe(before);

    await env.reset({ task: taskIndex(GOLD.readOnly) });
    expect((await env.step(FINGERPRINT)).observation).toBe(before);
    const check = await env.step(
      'ls /testbed/src >/dev/null && cat /etc/debian_version >/dev/null && stat -c %a /testbed/LICENSE; ' +
        'ls /testbed/new.txt /etc/evil.conf /root/junk /usr/local/bin/tool 2>&1 | wc -l; cd / && git status --short',
    );
    expect(check.observation).toBe('644\n4\n');
  });

  it('doing nothing on a task that adds a file scores below 1', async () => {
    const index = taskIndex(GOLD.addsFile);
    const reset = await env.reset({ task: index });
    const submit = await env.step('submit');
    // The gold adds one file the agent did not: file_diff 0.33·(1 − erf 1) → 0.05. The
    // last observation is the query (as in InterCode), the gold printed nothing: 0.
    expect(submit.info.score?.parts).toEqual({ file_diff: 0.05, file_changes: 0.33, answer_similarity: 0 });
    expect(submit.reward).toBe(0.01 + 0.05 + 0.33 + 0);
    expect(submit.reward).toBeLessThan(1);
    expect(submit.info.score?.details).toMatchObject({
      diff_miss: [['testbed/data/archive/readings-2022-12.csv', '??']],
      diff_extra: [],
      agent_obs: reset.observation,
      eval_obs: '',
    });
  });

  it('adding the right file with the wrong contents loses file_changes', async () => {
    await env.reset({ task: taskIndex(GOLD.addsFile) });
    await env.step('echo wrong > /testbed/data/archive/readings-2022-12.csv');
    const submit = await env.step('submit');
    expect(submit.info.score?.parts).toEqual({ file_diff: 0.33, file_changes: 0, answer_similarity: 0.33 });
    expect(submit.reward).toBe(0.01 + 0.33 + 0 + 0.33);
    expect(submit.info.score?.details).toMatchObject({
      diff_same: { files: [['testbed/data/archive/readings-2022-12.csv', '??']], correct: 0, total: 1 },
    });

    await env.reset({ task: taskIndex(GOLD.addsFile) });
    await env.step(GOLD.addsFile);
    expect((await env.step('submit')).reward).toBe(1);
  });

  it("compares an added folder's contents only in strict hash mode (InterCode's md5deep quirk)", async () => {
    const wrong = 'mkdir -p /testbed/reports && echo wrong > /testbed/reports/errors.txt';
    await env.reset({ task: taskIndex(GOLD.addsFolder) });
    await env.step(wrong);
    const lenient = await env.step('submit');
    expect(lenient.info.score?.parts).toEqual({ file_diff: 0.33, file_changes: 0.33, answer_similarity: 0.33 });

    const strict = await newEnv({ hashMode: 'strict' });
    await strict.reset({ task: taskIndex(GOLD.addsFolder) });
    await strict.step(wrong);
    const strictSubmit = await strict.step('submit');
    expect(strictSubmit.info.score?.parts).toEqual({ file_diff: 0.33, file_changes: 0, answer_similarity: 0.33 });
  });

  it('tool mode (data: null): no query, actions run, submit scores 0', async () => {
    const tool = await newEnv({ data: null });
    expect(tool.tasks).toEqual([]);
    const reset = await tool.reset();
    expect(reset).toEqual({ observation: '', info: { task: null, disk: { limitBytes: 2 * 1024 ** 3, enforcement: expect.stringMatching(/^(engine|watched|file-size)$/) } } });
    await expect(tool.reset({ task: 0 })).rejects.toBeInstanceOf(EnvStateError);
    await tool.reset();
    expect((await tool.step('cat /testbed/README.md >/dev/null && echo ok')).observation).toBe('ok\n');
    const submit = await tool.step('submit');
    expect(submit).toMatchObject({ reward: 0, terminated: true, truncated: false });
  });

  it('writes one InterCode-layout log per finished episode through writeEpisodeLogs', async () => {
    const dir = await writeTree({}, 'intercode-trajectories-');
    tempDirs.push(dir);
    const logged = writeEpisodeLogs(await newEnv(), dir);
    const index = taskIndex(GOLD.readOnly);
    await logged.reset({ task: index });
    const first = await logged.step('echo warming up');
    const gold = await logged.step(GOLD.readOnly);
    await logged.step('submit');
    await logged.reset({ task: index });
    await logged.step('skip');

    const files = (await readdir(dir)).sort();
    expect(files).toHaveLength(2);
    for (const file of files) expect(file).toMatch(new RegExp(`^ic_bash-${index}-\\d{8}T\\d{9}Z(-\\d+)?\\.json$`));
    const logs = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as EpisodeLog));
    const submitted = logs.find((log) => log.reward === 1)!;
    expect(submitted).toMatchObject({ environment: 'ic_bash', query_idx: index, query: logged.tasks[index]!.query, gold: GOLD.readOnly });
    expect(submitted.trajectory).toEqual([
      { action: 'echo warming up', observation: first.observation },
      { action: GOLD.readOnly, observation: gold.observation },
    ]);
    expect(submitted.info).toMatchObject({
      reward: { file_diff: 0.33, file_changes: 0.33, answer_similarity: 0.33 },
      diff_miss: [],
      diff_extra: [],
      agent_obs: gold.observation,
      eval_obs: gold.observation,
      answer_similarity: 1,
    });
    const skipped = logs.find((log) => log !== submitted)!;
    expect(skipped).toMatchObject({ reward: 0, trajectory: [], info: { skipped: true, reward: {} } });
  });

  it('a sandbox killed from outside truncates the episode (sandbox-lost), never scores it', async () => {
    const dir = await writeTree({}, 'intercode-trajectories-');
    tempDirs.push(dir);
    const victim = writeEpisodeLogs(await newEnv(), dir);
    const running = new Set((await testContainers(docker, testRun, true)).map((c) => c.Id));
    await victim.reset({ task: taskIndex(GOLD.readOnly) });
    const mine = (await testContainers(docker, testRun, true)).filter((c) => !running.has(c.Id));
    expect(mine).toHaveLength(1);
    expect((await victim.step('echo alive')).observation).toBe('alive\n');

    await docker.getContainer(mine[0]!.Id).kill();
    const lost = await victim.step('echo hello');
    expect(lost).toMatchObject({ reward: 0, terminated: false, truncated: true });
    expect(lost.info.truncation?.reason).toBe('sandbox-lost');
    expect(lost.info.score).toBeUndefined();
    expect(lost.observation).toMatch(/^\[intercode: the sandbox was lost: /);
    await expect(victim.step('submit')).rejects.toBeInstanceOf(EnvStateError);

    const [file] = await readdir(dir);
    const log = JSON.parse(await readFile(join(dir, file!), 'utf8')) as EpisodeLog;
    expect(log.reward).toBeNull();
    expect(log.trajectory).toEqual([{ action: 'echo alive', observation: 'alive\n' }]);

    await victim.reset({ task: taskIndex(GOLD.readOnly) });
    expect((await victim.step('echo back')).observation).toBe('back\n');
  });

  // Regression (was a bug): SandboxEnv.step scores a submit outside its SandboxError
  // handling, so submitting on a dead sandbox throws SANDBOX_LOST instead of truncating
  // the episode, and the episode is left open.
  it('submitting on a sandbox killed from outside truncates the episode too', async () => {
    const victim = await newEnv();
    const running = new Set((await testContainers(docker, testRun, true)).map((c) => c.Id));
    await victim.reset({ task: taskIndex(GOLD.readOnly) });
    const mine = (await testContainers(docker, testRun, true)).filter((c) => !running.has(c.Id));
    expect(mine).toHaveLength(1);
    await docker.getContainer(mine[0]!.Id).kill();
    const submit = await victim.step('submit');
    expect(submit).toMatchObject({ reward: 0, terminated: false, truncated: true });
    expect(submit.info.truncation?.reason).toBe('sandbox-lost');
  });

  // The pooled case, compared with an untouched sandbox from the host: pool-restore.test.ts.
  it("in a new sandbox, an episode that replaced the scorer's git is truncated (state-unreadable) from the engine's own list of changes", async () => {
    const faker = await newEnv();
    await faker.reset({ task: taskIndex(GOLD.readOnly) });
    const fake = await faker.step("rm -rf /testbed/logs && printf '#!/bin/sh\\nexit 0\\n' > /usr/bin/git && git status; echo $?");
    expect(fake.observation).toBe('0\n');
    await faker.step(GOLD.readOnly);
    const submit = await faker.step('submit');
    expect(submit).toMatchObject({ reward: 0, terminated: false, truncated: true });
    expect(submit.info.truncation).toEqual({ reason: 'state-unreadable', message: 'the episode changed what the scorer runs or reads (/usr/bin/git: modified)' });
  });

  it("changes hidden behind more untracked files than the scorer's shell keeps: the submit is truncated (state-unreadable), never scored", async () => {
    // Writing 8,000 names took past the default 10 s under gVisor on a loaded 2-core machine:
    // the flood steps get a minute each (what is tested is the submit, not the flood's speed).
    const hider = await newEnv({ shell: { timeoutMs: 60_000 } });
    await hider.reset({ task: taskIndex(GOLD.readOnly) });
    // ~24,000 names of ~205 characters: `git status --short` prints ~5 MB, past the 4 MiB
    // kept. In three steps: under gVisor one takes seconds.
    for (const first of [1, 8001, 16001]) {
      const flood = await hider.step(`cd /testbed && pad=$(printf 'x%.0s' {1..200}) && seq ${first} ${first + 7999} | sed "s/^/$pad/" | xargs touch && ls | wc -l`);
      expect(flood.info.exitCode, flood.observation).toBe(0);
    }
    const submit = await hider.step('submit');
    expect(submit).toMatchObject({ reward: 0, terminated: false, truncated: true });
    expect(submit.info.truncation).toMatchObject({ reason: 'state-unreadable', message: expect.stringMatching(/^git status printed more than the scorer's shell keeps/) });
    expect(submit.info.score).toBeUndefined();
  }, 300_000);
});

const NL2BASH = resolve(dirname(fileURLToPath(import.meta.url)), '../../../shared/intercode-data');
const fs1Present = existsSync(join(NL2BASH, 'nl2bash/fs-1.tar')) && existsSync(join(NL2BASH, 'trajectories/bash'));
if (!fs1Present) console.warn(`skipping InterCode fs-1 replays: ${NL2BASH} does not exist`);

describe.skipIf(!fs1Present || skipWithoutEngine(engine, "BashEnv on InterCode's fs-1"))("BashEnv on InterCode's fs-1 testbed (reference data)", () => {
  let env: BashEnv;
  const recorded = async () =>
    JSON.parse(await readFile(join(NL2BASH, 'trajectories/bash/ic_bash_multiturn_gpt-3.5_10_turns_fs_1.json'), 'utf8')) as Record<
      string,
      { task_id: number; turn_history: { actions: string[]; observations: string[]; rewards: number[] } }
    >;

  beforeAll(async () => {
    await bashTestbedImage(requireEngine(engine), join(NL2BASH, 'nl2bash/fs-1.tar'));
    env = await createBashEnv({
      engines: testEngines(),
      data: join(NL2BASH, 'nl2bash/nl2bash_fs_1.json'),
      testbed: join(NL2BASH, 'nl2bash/fs-1.tar'),
      execMode: 'intercode',
    });
  });

  afterAll(async () => {
    await env?.close();
  });

  // Episodes whose last action alone reproduces the recorded end state (read-only, or the only action).
  it.each(['0', '4', '8', '14'])('episode %s: the last recorded action gives the recorded observation and reward', async (key) => {
    const episode = (await recorded())[key]!;
    const { actions, observations, rewards } = episode.turn_history;
    await env.reset({ task: episode.task_id });
    const step = await env.step(actions.at(-1)!);
    expect(step.observation).toBe(observations.at(-1));
    const submit = await env.step('submit');
    expect(submit.reward).toBe(rewards.at(-1));
  });
});
