/**
 * The bash env's `intercode` reset mode against the default in real sandboxes: state in a
 * git-ignored folder (/root) carries over to the next episode, tracked files are restored,
 * untracked ones and empty folders (/tmp) are gone; the gold runs in a kept sandbox whose
 * /root keeps what earlier gold runs wrote; the testbed's files look as freshly written as
 * InterCode's did at the start of its runs, except those dated on purpose. The default mode
 * shows none of it.
 */
import { rm, writeFile } from 'node:fs/promises';
import { pack } from 'tar-stream';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnv, type BashEnvOptions } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { bashTestbedImage, dockerTestFile, requireEngine, skipWithoutEngine, testContainers, writeTree } from '../setup/docker.js';

const { testRun, engine } = await dockerTestFile();

/** Task 0 changes nothing; task 1's gold makes a folder in /root, which fails once it exists. */
const TASKS = [
  { query: 'Print the working directory.', gold: 'pwd' },
  { query: 'Make the folder ~/links.', gold: 'mkdir ~/links && echo made' },
];

const PROBE = 'cat /root/marker; ls /testbed/untracked.txt; head -c 7 /testbed/README.md; echo; test -d /tmp && echo has-tmp || echo no-tmp; pwd';

describe.skipIf(skipWithoutEngine(engine, 'bash --reset intercode'))('bash env reset modes', () => {
  let dataDir: string;
  const envs: BashEnv[] = [];
  /** Images built from testbeds made here (dated by the clock: a new one each run), removed at the end. */
  const builtImages: string[] = [];

  async function newEnv(options: Partial<BashEnvOptions>): Promise<BashEnv> {
    const env = await createBashEnv({ data: join(dataDir, 'tasks.json'), seed: 1, ...options });
    envs.push(env);
    return env;
  }

  /** Episode 1 writes in /root, in a tracked file and an untracked one, and leaves the cwd; episode 2 looks. */
  async function twoEpisodes(env: BashEnv): Promise<{ first: string; second: string }> {
    await env.reset({ task: 0 });
    const first = (await env.step(PROBE)).observation;
    await env.step('echo kept > /root/marker; echo new > /testbed/untracked.txt; echo changed > /testbed/README.md; cd /testbed');
    await env.step('skip');
    await env.reset({ task: 0 });
    return { first, second: (await env.step(PROBE)).observation };
  }

  beforeAll(async () => {
    const docker = requireEngine(engine);
    await bashTestbedImage(docker);
    dataDir = await writeTree({ 'tasks.json': JSON.stringify(TASKS) }, 'intercode-reset-tasks-');
  });

  afterAll(async () => {
    await Promise.all(envs.map((env) => env.close()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    for (const tag of builtImages) await requireEngine(engine).getImage(tag).remove();
  });

  it('intercode: /root keeps state across episodes, tracked files are restored, untracked ones and /tmp are gone, the cwd is /', async () => {
    const env = await newEnv({ reset: 'intercode' });
    const { first, second } = await twoEpisodes(env);
    expect(first).toContain('no-tmp');
    expect(first).toMatch(/cat: \/root\/marker: No such file or directory/);
    expect(second).toMatch(/^kept\n/);
    expect(second).toMatch(/ls: cannot access '\/testbed\/untracked.txt': No such file or directory/);
    expect(second).not.toContain('changed');
    expect(second).toMatch(/no-tmp\n\/\n$/);
    expect(env.sharesWorkspaces).toBe(false);
  });

  it('intercode, exec mode too: the same agent sandbox across episodes', async () => {
    const env = await newEnv({ reset: 'intercode', execMode: 'intercode' });
    const { second } = await twoEpisodes(env);
    // One exec per action: stderr (ls's complaint) may arrive before or after the stdout lines.
    expect(second).toMatch(/^(ls: .*\n)?kept\n/);
    expect(second).toContain("ls: cannot access '/testbed/untracked.txt': No such file or directory\n");
    expect(second).toContain('no-tmp\n/\n');
  });

  it('exact (the default): nothing of episode 1 is left and /tmp exists', async () => {
    const env = await newEnv({});
    const { first, second } = await twoEpisodes(env);
    expect(first).toContain('has-tmp');
    expect(second).toMatch(/cat: \/root\/marker: No such file or directory/);
    expect(second).toContain('has-tmp');
    expect(env.sharesWorkspaces).toBe(true);
  });

  it('intercode: the gold runs in a kept sandbox whose /root remembers earlier gold runs; exact: a fresh one each time', async () => {
    const kept = await newEnv({ reset: 'intercode' });
    await kept.reset({ task: 1 });
    const firstScore = await kept.peekScore();
    const secondScore = await kept.peekScore();
    expect(firstScore.details?.eval_obs).toBe('made\n');
    expect(secondScore.details?.eval_obs).toMatch(/mkdir: cannot create directory '\/root\/links': File exists/);
    expect(secondScore.details?.gold_cached).toBe(false);

    const exact = await newEnv({ goldCache: false });
    await exact.reset({ task: 1 });
    expect((await exact.peekScore()).details?.eval_obs).toBe('made\n');
    expect((await exact.peekScore()).details?.eval_obs).toBe('made\n');
  });

  it('intercode: an env holds exactly two sandboxes (agent and gold) across episodes and removes them on close', async () => {
    const docker = requireEngine(engine);
    // Counted by id: sandboxes of earlier tests may still be on their way out (removed in the background).
    const before = new Set((await testContainers(docker, testRun)).map((c) => c.Id));
    const made = async () => (await testContainers(docker, testRun)).filter((c) => !before.has(c.Id)).length;
    const env = await newEnv({ reset: 'intercode' });
    for (let episode = 0; episode < 3; episode++) {
      await env.reset({ task: 0 });
      await env.step('pwd');
      await env.peekScore();
    }
    expect(await made()).toBe(2);
    await env.close();
    expect(await made()).toBe(0);
  });

  it('intercode: testbed files written with the tree look minutes old, on both sides; files dated on purpose keep their dates', async () => {
    const docker = requireEngine(engine);
    const written = Math.floor(Date.now() / 1000) - 3 * 3600;
    const tar = pack();
    tar.entry({ name: 'tb/', type: 'directory', mtime: new Date(written * 1000) });
    tar.entry({ name: 'tb/setup.txt', mtime: new Date((written - 60) * 1000) }, 'written by the setup\n');
    tar.entry({ name: 'tb/later.txt', mtime: new Date(written * 1000) }, 'a minute later\n');
    tar.entry({ name: 'tb/old.txt', mtime: new Date('2023-05-31T23:59:00Z') }, 'dated on purpose\n');
    tar.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of tar) chunks.push(chunk as Buffer);
    const tarPath = join(dataDir, 'dated.tar');
    await writeFile(tarPath, Buffer.concat(chunks));
    builtImages.push(await bashTestbedImage(docker, tarPath));
    const tasks = join(dataDir, 'dated-tasks.json');
    await writeFile(tasks, JSON.stringify([{ query: 'Which files in /tb changed in the last hour?', gold: 'find /tb -cmin -60 -type f | sort' }]));
    // Folders must take the room of new ones (an overlay copy-up would add an extended-attribute block `du` counts).
    const probe =
      'find /tb -mmin -60 | sort; find /tb -amin -60 -type f | wc -l; date -u -r /tb/old.txt +%F; ' +
      'echo $(( $(stat -c %Y /tb/later.txt) - $(stat -c %Y /tb/setup.txt) )); mkdir /new-dir; [ $(stat -c %b /tb) = $(stat -c %b /new-dir) ] && echo same-room; rmdir /new-dir';

    const fresh = await newEnv({ reset: 'intercode', data: tasks, testbed: tarPath });
    await fresh.reset({ task: 0 });
    expect((await fresh.step(probe)).observation).toBe('/tb\n/tb/later.txt\n/tb/setup.txt\n3\n2023-05-31\n60\nsame-room\n');
    const score = await fresh.peekScore();
    expect(score.details?.eval_obs).toBe('/tb/later.txt\n/tb/old.txt\n/tb/setup.txt\n');

    const exact = await newEnv({ data: tasks, testbed: tarPath });
    await exact.reset({ task: 0 });
    expect((await exact.step(probe)).observation).toBe('0\n2023-05-31\n60\nsame-room\n');
  });
});
