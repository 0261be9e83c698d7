/**
 * Process ids of a restored sandbox ≡ a new one's (issue 25; fs-1 task 55's gold finds its
 * own command line under /proc/<pid>): the harness pins its control shell's, the agent's
 * runner's and the episode's first process ids (PINNED_PIDS) in a new sandbox and at every
 * in-place restore, from the host. Real engine: after an episode that ran hundreds of
 * processes and left one running, the restored sandbox's next ids, its shells' ids and its
 * process table (but for the idle process, whose id the runtime's start-up decides: see
 * docs/fidelity.md) are a new sandbox's, and two new sandboxes agree too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import { InPlaceRestorer } from '../../src/pool/reuse/in-place-restore.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

/** What an action sees of process ids: its shell's, the next ones it starts, the process table (idle process left out). */
const OBSERVE_PIDS = "echo $$; sh -c 'echo $PPID $$'; sh -c 'echo $$'; ps -eo pid,ppid,args --no-headers | grep -v -e intercode-idle";

const skip = skipWithoutEngine(engine, 'restored process ids') || gvisorGap('process ids are set from the host, which runsc sandboxes do not share');

describe.skipIf(skip)('a restored sandbox hands out the process ids of a new one', () => {
  let env: BashEnv;
  let factory: WorkspaceFactory;
  let restorer: InPlaceRestorer;
  beforeAll(async () => {
    requireEngine(engine);
    [env] = (await createBashEnvs({ goldCache: false }, 1)) as [BashEnv];
    factory = env.workspaceFactory();
    restorer = new InPlaceRestorer(factory);
  }, 600_000);
  afterAll(async () => {
    await restorer?.close();
    await env?.close();
  });

  const observe = async (workspace: Workspace) => (await workspace.runner.run(OBSERVE_PIDS)).output;

  it('after an episode that ran many processes: the same shells, next ids and process table as in a new sandbox', async () => {
    const [a, b, used] = await Promise.all([factory.create(), factory.create(), factory.create()]);
    try {
      const [inA, inB] = [await observe(a), await observe(b)];
      expect(inA).toEqual(inB);
      expect(inA.split('\n')[0]).toMatch(/^\d+$/);
      await used.runner.run('for i in $(seq 400); do /bin/true; done; (sleep 1000 &); sleep 1000 & echo started');
      expect(await restorer.restore(used)).toEqual({ clean: true });
      expect(await observe(used)).toEqual(inA);
    } finally {
      await Promise.all([a, b, used].map((w) => factory.destroy(w)));
    }
  }, 300_000);
});
