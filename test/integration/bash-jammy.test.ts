/**
 * The bash env on the Ubuntu 22.04 base (`--base ubuntu-jammy`), the system InterCode's
 * NL2Bash image had: builds the base (pulled, or bootstrapped with debootstrap) and the
 * testbed image on it, then checks the tool versions InterCode's actions saw, the
 * minimized-image `man` and merged-/usr links, and that the testbed works — a gold scores 1.0, in both exec modes.
 * Builds take about a minute the first time (base and packages); later runs find the images.
 */
import type Docker from 'dockerode';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_BASH_TASKS, createBashEnv, type BashEnvOptions } from '../../envs/bash/index.js';
import { bashTestbedRecipe, BUILTIN_TESTBED } from '../../envs/bash/images.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { buildImageUnlabelled, dockerTestFile, FALLBACK_TESTBED_FILES, requireEngine, skipWithoutEngine, writeTree } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** Changes the testbed (adds a file) and prints; in the built-in tasks and written for the fallback. */
const GOLD = 'gzip -dk /testbed/data/archive/readings-2022-12.csv.gz && grep -c , /testbed/data/archive/readings-2022-12.csv';

describe.skipIf(skipWithoutEngine(engine, 'bash on Ubuntu 22.04'))('bash env on the Ubuntu 22.04 base', () => {
  let docker: Docker;
  const envs: BashEnv[] = [];
  const temp: string[] = [];
  let options: Partial<BashEnvOptions>;

  beforeAll(async () => {
    docker = requireEngine(engine);
    const builtin = existsSync(BUILTIN_BASH_TASKS) && existsSync(BUILTIN_TESTBED);
    const testbed = builtin ? BUILTIN_TESTBED : await writeTree(FALLBACK_TESTBED_FILES);
    const dataDir = await writeTree({ 'tasks.json': JSON.stringify([{ query: 'Unpack the December readings and count their lines with a comma.', gold: GOLD }]) }, 'intercode-tasks-');
    temp.push(dataDir, ...(builtin ? [] : [testbed]));
    await buildImageUnlabelled(docker, await bashTestbedRecipe(testbed, 'ubuntu-jammy'));
    options = { base: 'ubuntu-jammy', testbed, data: join(dataDir, 'tasks.json'), seed: 1 };
  });

  afterAll(async () => {
    await Promise.all(envs.map((env) => env.close()));
    await Promise.all(temp.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  async function env(execMode: 'session' | 'intercode'): Promise<BashEnv> {
    const created = await createBashEnv({ ...options, execMode });
    envs.push(created);
    return created;
  }

  it('runs Ubuntu 22.04 with bash 5.1 and coreutils 8.32, and the minimized image\'s man', async () => {
    const bash = await env('intercode');
    await bash.reset({ task: 0 });
    expect((await bash.step('. /etc/os-release; echo $VERSION_ID $VERSION_CODENAME')).observation).toBe('22.04 jammy\n');
    expect((await bash.step('echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}')).observation).toBe('5.1\n');
    expect((await bash.step('ls --version | head -n1')).observation).toBe('ls (GNU coreutils) 8.32\n');
    expect((await bash.step('man find | head -n2 | tail -n1')).observation).toBe(
      'This system has been minimized by removing packages and content that are\n',
    );
    const tools = await bash.step('for t in python3 pstree column crontab convert dig git tree netstat ping curl cpio jq; do command -v $t >/dev/null || echo missing $t; done');
    expect(tools.observation).toBe('');
    expect((await bash.step('ls /usr/share/man 2>&1 | wc -l; env | grep -c DEBIAN_FRONTEND')).observation).toBe('0\n0\n');
    expect((await bash.step('readlink /lib32 /lib64 /libx32')).observation).toBe('usr/lib32\nusr/lib64\nusr/libx32\n');
  });

  it.each(['intercode', 'session'] as const)('scores the gold 1.0 on the testbed (%s exec)', async (mode) => {
    const bash = await env(mode);
    await bash.reset({ task: 0 });
    const wrong = await bash.step('echo nothing');
    expect(wrong.reward).toBe(0);
    await bash.reset({ task: 0 });
    expect((await bash.step(GOLD)).observation).toMatch(/^[1-9]\d*\n$/);
    const submit = await bash.step('submit');
    expect(submit).toMatchObject({ reward: 1, terminated: true });
    expect(submit.info.score?.details).toMatchObject({ diff_miss: [], diff_extra: [] });
  });
});
