/**
 * CTF observations are capped in bytes before they reach this process's memory, as bash's
 * are: the agent's shell is a ShellSession with the CTF env's options (what createCtfEnvs
 * passes), which keeps 64 KiB of a step's output, counts the rest and kills a command past
 * 1 MiB. Run on the bash testbed image (the CTF image's tools play no part in the cap; its
 * build takes many minutes) with the built-in CTF tasks and files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_CTF_ASSETS, BUILTIN_CTF_TASKS, CTF_LIMITS, CTF_TIMEOUT_MS, CtfEnv, TaskAssets } from '../../envs/ctf/index.js';
import { loadDataset, type Task } from '../../src/datasets/index.js';
import type { Workspace } from '../../src/pool/types.js';
import { EngineSet } from '../../src/sandbox/backends/engine-set.js';
import { DEFAULT_SHELL_OPTIONS } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** The CTF env on an image without the CTF image's /ctf folder: made before the task's files go in. */
class CtfOnTestbed extends CtfEnv {
  protected override async prepareEpisode(workspace: Workspace, task: Task | null): Promise<void> {
    await workspace.control.run('mkdir -p /ctf');
    return super.prepareEpisode(workspace, task);
  }
}

describe.skipIf(skipWithoutEngine(engine, 'CTF observation cap'))('CTF observations are capped in bytes', () => {
  let env: CtfEnv;
  let engines: EngineSet;

  beforeAll(async () => {
    const image = await bashTestbedImage(requireEngine(engine));
    engines = EngineSet.local();
    env = new CtfOnTestbed({
      runtime: await engines.runtime(),
      spec: { image, hostname: 'intercode', limits: CTF_LIMITS, capabilities: DEFAULT_CAPABILITIES },
      dataset: await loadDataset(BUILTIN_CTF_TASKS),
      assets: new TaskAssets(BUILTIN_CTF_ASSETS),
      wrongFlag: 'continue',
      shell: { timeoutMs: CTF_TIMEOUT_MS },
    });
  }, 300_000);

  afterAll(async () => {
    await env?.close();
    engines?.close();
  });

  it('a step that prints 5 MB shows 64 KiB and says how much it printed; an endless one is killed past 1 MiB', async () => {
    await env.reset({ task: 0 });
    const rss = process.memoryUsage().rss;
    const big = await env.step("head -c 5000000 /dev/zero | tr '\\0' x");
    const kept = DEFAULT_SHELL_OPTIONS.maxOutputBytes;
    expect(big.observation.startsWith('x'.repeat(kept))).toBe(true);
    expect(big.observation.length).toBeLessThan(kept + 1000);
    expect(big.info.events).toContainEqual({ kind: 'output-limit', shownBytes: kept, totalBytes: expect.any(Number), killed: true });
    const endless = await env.step('cat /dev/zero');
    expect(endless.truncated).toBe(false);
    expect(endless.info.events.find((e) => e.kind === 'output-limit')).toMatchObject({ shownBytes: kept, killed: true });
    expect(endless.info.durationMs).toBeLessThan(CTF_TIMEOUT_MS);
    // The floods held this process's memory to the caps (a generous margin for everything else).
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 1024 * 1024);
    // The episode goes on in the task's folder.
    expect((await env.step('pwd')).observation).toBe(`/ctf/${env.currentTask!.id}\n`);
  });
});
