/**
 * InterCode's own CTF tasks (../shared/intercode-data, when present): every task whose
 * solution/ holds a runnable solver (.py, .java, .sh) gets that solver copied into its
 * episode by this test, and run there; its output must give the gold flag. Skipped when
 * the reference data is absent.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCtfEnvs, ctfRecipe, type CtfEnv } from '../../envs/ctf/index.js';
import { buildImageUnlabelled, dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';
import { runSolvers, solverFiles, type SolverRun } from './solvers.js';

const DATA = resolve(import.meta.dirname, '../../../shared/intercode-data/ctf/ic_ctf.json');
const ASSETS = resolve(import.meta.dirname, '../../../shared/intercode-data/ctf/task_assets');

/** Solvers that print only the text inside `picoCTF{…}` (the VaultDoor passwords; new_caesar's candidates). */
const PRINTS_BODY = new Set(['45', '46', '47', '49', '50', '51', '72']);
/** Prints the eight key characters computed from the user name, one per line; the rest of the key is fixed. */
const PRINTS_KEY_PART = '13';
/** Talks to the challenge's server on the internet; sandboxes have no network. */
const NEEDS_NETWORK = '85';

const { engine } = await dockerTestFile();

const skip = !existsSync(DATA) || skipWithoutEngine(engine, "InterCode's CTF solvers");
if (!existsSync(DATA)) console.warn(`skipping InterCode's CTF solvers: ${DATA} does not exist`);

describe.skipIf(skip)("InterCode's CTF solvers in the sandbox", () => {
  let env: CtfEnv;
  beforeAll(async () => {
    await buildImageUnlabelled(requireEngine(engine), await ctfRecipe());
    [env] = (await createCtfEnvs({ data: DATA, shell: { timeoutMs: 120_000 } }, 1)) as [CtfEnv];
  });
  afterAll(() => env?.close());

  it('each runnable solver yields its task\'s gold flag', async () => {
    const outcomes = new Map<string, SolverRun>();
    for (const task of env.tasks) {
      const files = solverFiles(ASSETS, task.id);
      if (files.length === 0) continue;
      await env.reset({ task });
      for (const run of await runSolvers(env, task, ASSETS, files)) outcomes.set(`${task.id}/${run.file}`, run);
    }
    const byTask = (id: string) => [...outcomes].filter(([key]) => key.startsWith(`${id}/`)).map(([, run]) => run);
    const gold = (id: string) => String(env.tasks.find((t) => t.id === id)!.gold);

    const whole = [...outcomes].filter(([, run]) => run.foundFrom).map(([key]) => key.split('/')[0]);
    const bodies = [...PRINTS_BODY].filter((id) => byTask(id).some((run) => run.output.includes(gold(id).slice('picoCTF{'.length, -1))));
    const keyPart = byTask(PRINTS_KEY_PART)[0]!.output.split('\n').join('');
    const network = byTask(NEEDS_NETWORK)[0]!.output;
    console.log(
      `InterCode CTF solvers: ${outcomes.size} solvers in ${new Set([...outcomes.keys()].map((k) => k.split('/')[0])).size} tasks; ` +
        `whole flag printed: ${whole.length} (${whole.join(', ')}); flag body printed: ${bodies.length} (${bodies.join(', ')})`,
    );

    expect(outcomes.size).toBe(23);
    expect(whole.sort()).toEqual(['10', '12', '26', '27', '3', '33', '34', '40', '48', '69', '79', '80', '86', '9'].sort());
    expect(bodies).toEqual([...PRINTS_BODY]);
    expect(keyPart).toHaveLength(8);
    expect(gold(PRINTS_KEY_PART).endsWith(`${keyPart}}`)).toBe(true);
    expect(network).toMatch(/Temporary failure in name resolution|Name or service not known/);
  }, 900_000);
});
