/**
 * Episode roots are new containers by construction (issue 40): a new episode root of the
 * built-in bash image answers the observers (test/setup/root-observer.ts: every path's
 * metadata, `du`, `ls`, and the process's capabilities, seccomp, mounts, cgroups, processes,
 * network, IPC, /dev, /etc, environment, limits) as a brand-new Docker container of the same
 * spec does, after the normalization of what any two new containers differ in — and the
 * control, two new Docker containers, agrees under the same normalization, so the
 * comparison is no weaker than Docker's own variance. A root an agent already wrote in is
 * flagged (the comparison can fail).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBashEnvs } from '../../envs/bash/index.js';
import type { BashEnv } from '../../envs/bash/bash-env.js';
import type { Workspace, WorkspaceFactory } from '../../src/pool/types.js';
import { EngineSet } from '../../src/sandbox/multi/engine-set.js';
import { dockerTestFile, gvisorGap, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { compareObservations } from '../setup/restore-observer.js';
import { PINNED_PIDS } from '../../src/pool/process-ids.js';
import { ROOT_OBSERVER, normalizeSystemLine, withoutExecChildIds } from '../setup/root-observer.js';

const { engine } = await dockerTestFile();
const skip = skipWithoutEngine(engine, 'episode-root equivalence') || gvisorGap('episode roots run under runc only');

async function observeAll(workspace: Workspace): Promise<string> {
  const result = await workspace.sandbox.exec(['bash', '-c', ROOT_OBSERVER], { timeoutMs: 300_000 });
  const text = result.output.toString();
  // The observers ran: thousands of find lines and the system ones.
  expect(text.split('\n').filter((l) => l.startsWith('find\t')).length).toBeGreaterThan(1000);
  expect(text).toMatch(/^status\tSeccomp:/m);
  return text.split('\n').map(normalizeSystemLine).join('\n');
}

describe.skipIf(skip)('a new episode root answers as a new container', () => {
  const made: { env: BashEnv; workspaces: Workspace[]; factory: WorkspaceFactory }[] = [];
  const open = async (kind: 'episode-roots' | 'containers') => {
    const [env] = (await createBashEnvs({ goldCache: false, engines: EngineSet.local({ kind }) }, 1)) as [BashEnv];
    const entry = { env, workspaces: [] as Workspace[], factory: env.workspaceFactory() };
    made.push(entry);
    return async () => {
      const workspace = await entry.factory.create();
      entry.workspaces.push(workspace);
      return workspace;
    };
  };
  let containers: string[];
  let roots: string[];
  let newRoot: () => Promise<Workspace>;
  beforeAll(async () => {
    requireEngine(engine);
    const newContainer = await open('containers');
    newRoot = await open('episode-roots');
    containers = [await observeAll(await newContainer()), await observeAll(await newContainer())];
    roots = [await observeAll(await newRoot()), await observeAll(await newRoot())];
  }, 600_000);
  afterAll(async () => {
    for (const { env, workspaces, factory } of made) {
      for (const workspace of workspaces) await factory.destroy(workspace).catch(() => undefined);
      await env.close();
    }
  });

  // The observer runs as the episode's first process; its children's ids follow the engine's exec.
  const vsContainer = (text: string) => withoutExecChildIds(text, PINNED_PIDS.episode);

  it('control: two new containers agree', () => {
    expect(compareObservations(vsContainer(containers[0]!), vsContainer(containers[1]!))).toEqual([]);
  });

  it('a new root agrees with a new container, and two new roots agree exactly', () => {
    expect(compareObservations(vsContainer(containers[0]!), vsContainer(roots[0]!))).toEqual([]);
    expect(compareObservations(roots[0]!, roots[1]!)).toEqual([]);
  });

  it('negative control: a root an episode wrote in is told apart', async () => {
    const written = await newRoot();
    await written.sandbox.exec(['bash', '-c', 'touch /testbed/README.md; echo x > /tmp/x']);
    const diff = compareObservations(containers[0]!, await observeAll(written));
    expect(diff.some((line) => line.includes('/tmp/x'))).toBe(true);
    expect(diff.some((line) => line.includes('/testbed/README.md'))).toBe(true);
  });
});
