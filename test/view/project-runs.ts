/**
 * Run folders made by the project's own writers (no hand-typed lines): `runEval` (eval's
 * episodes.jsonl and InterCode result log), `sampleGroups` + `formatRecord` (collect's three
 * llm formats, server tokens included), `rollout` + `formatDemoLine` (collect's gold
 * demonstrations), `writeEpisodeLog` (`--trajectories`), on FakeEnv against the recorded
 * model over HTTP. One env answers every action with hostile text when asked.
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createStrategy, OpenAiChatClient } from '../../src/agents/index.js';
import type { Task } from '../../src/datasets/index.js';
import type { StepResult } from '../../src/env/types.js';
import { runEval } from '../../src/eval/index.js';
import { RecordedModel, startMockServer } from '../../src/mock-llm/index.js';
import { GoldPolicy, rollout } from '../../src/policy/index.js';
import { formatRecord, sampleGroups, type RolloutFormat, type RolloutRecord } from '../../src/rollouts/index.js';
import { toIntercodeLog, writeEpisodeLog } from '../../src/trajectory/index.js';
import { VecEnv, VecEpisodeDriver } from '../../src/vec/index.js';
import { demoFromRollout, formatDemoLine } from '../../training/demos/demo-episode.js';
import { bashPlugin } from '../../envs/bash/plugin.js';
import { recordedEnvFence } from '../../envs/index.js';
import { FakeEnv, task } from '../eval/fake-env.js';

export const TASKS: Task[] = [task(0, 'List the files in /srv', 'ls /srv'), task(1, 'Print the date', 'date'), task(2, 'Show the disk usage of /var', 'du -sh /var')];

/** What the hostile env prints: markup, a textarea break-out, terminal escapes, a lone surrogate, a marker the tests turn into invalid UTF-8 bytes. */
export const HOSTILE = `<script>document.title='pwned'</script></textarea></pre><img src=x onerror="document.title='pwned'">\u001b[31mRED\u001b[0m\u001b]0;title\u0007 \ud800 INVALID_UTF8_HERE`;
/** Bytes the marker becomes in the file: not UTF-8. */
export const INVALID_BYTES = Buffer.from([0xff, 0xfe, 0xc3]);
/** The size of the hostile env's long observation. */
export const LONG_OBSERVATION = 10 * 1024 * 1024;

/** FakeEnv whose `hostile` action prints {@link HOSTILE} and whose `flood` action prints 10 MB. */
class HostileEnv extends FakeEnv {
  override async step(action: string): Promise<StepResult> {
    const result = await super.step(action);
    if (action.startsWith('hostile')) return { ...result, observation: HOSTILE };
    if (action.startsWith('flood')) return { ...result, observation: 'x'.repeat(LONG_OBSERVATION - 6) + 'THEEND' };
    return result;
  }
}

const recorded = (query: string, actions: string[]) => ({
  environment: 'ic_bash',
  query,
  turn_history: { actions, observations: actions.map(() => ''), rewards: actions.map(() => 0), valid_action: actions.map(() => true) },
  summary: { max_reward: 0 },
});

export interface ProjectRuns {
  evalDir: string;
  collectDir: string;
  trajectoriesDir: string;
  /** collect's llm formats, by format. */
  rollouts: Record<RolloutFormat, string>;
  demos: string;
}

/**
 * Writes the runs under `root`. With `hostile`, task 1's episodes play `hostile` and `flood`
 * actions, and the marker in the eval journal is replaced by invalid UTF-8 bytes.
 */
export async function makeProjectRuns(root: string, options: { hostile?: boolean } = {}): Promise<ProjectRuns> {
  const recording = {
    0: recorded(TASKS[0]!.query, ['ls', 'I cannot.', 'ls /srv']),
    1: recorded(TASKS[1]!.query, options.hostile ? ['hostile', 'flood', 'date'] : ['echo', 'cal']),
    2: recorded(TASKS[2]!.query, ['du -sh /var | cat', 'submit']),
  };
  await mkdir(root, { recursive: true });
  const recordingFile = join(root, 'recording.json');
  await writeFile(recordingFile, JSON.stringify(recording));
  const server = await startMockServer(await RecordedModel.load(recordingFile, recordedEnvFence), 0);
  const envs = () => new VecEpisodeDriver(new VecEnv([new HostileEnv(TASKS), new HostileEnv(TASKS)], { autoreset: 'disabled' }));
  const model = (tokens: 'none' | 'ids') => new OpenAiChatClient({ baseUrl: server.baseUrl, model: 'recorded', tokens, temperature: 1, backoffMs: 1 });
  try {
    const evalDir = join(root, 'eval-run');
    await runEval({
      envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'tasks.json', turns: 4,
      strategy: createStrategy('try-again', { prompt: bashPlugin.agent.prompt, model: model('none') }), model: 'recorded', tasks: TASKS,
      executor: envs(), out: evalDir, settings: { env: 'bash', strategy: 'try-again', turns: 4 },
    });
    if (options.hostile) {
      const journal = join(evalDir, 'episodes.jsonl');
      const bytes = await readFile(journal);
      const marker = Buffer.from('INVALID_UTF8_HERE');
      const parts: Buffer[] = [];
      let from = 0;
      for (let at = bytes.indexOf(marker); at !== -1; at = bytes.indexOf(marker, from)) {
        parts.push(bytes.subarray(from, at), INVALID_BYTES);
        from = at + marker.length;
      }
      parts.push(bytes.subarray(from));
      await writeFile(journal, Buffer.concat(parts));
    }

    const collectDir = join(root, 'collect');
    await mkdir(collectDir, { recursive: true });
    const records: RolloutRecord[] = [];
    await sampleGroups({
      envName: 'bash', stepScoring: bashPlugin.agent.stepScoring, dataset: 'd', strategy: createStrategy('tools', { prompt: bashPlugin.agent.prompt, model: model('ids') }), model: 'recorded', tasks: TASKS,
      executor: envs(), turns: 4, samplesPerTask: 3, seed: 100, temperature: 1, scaleAdvantages: false, stamp: 'run',
      onGroup: (group) => void records.push(...group),
    });
    const rollouts = {} as Record<RolloutFormat, string>;
    for (const format of ['jsonl', 'hf-messages', 'atif'] as const) {
      rollouts[format] = join(collectDir, `rollouts-${format}.jsonl`);
      await writeFile(rollouts[format], records.map((r) => `${formatRecord(r, format, '0.1.0')}\n`).join(''));
    }

    const demos = join(collectDir, 'demos.jsonl');
    const trajectoriesDir = join(root, 'trajectories');
    const env = new HostileEnv(TASKS);
    for (const t of TASKS) {
      const played = await rollout(env, new GoldPolicy(({ task: x }) => [String(x.gold)]), { envName: 'bash', task: t, turnLimit: 3 });
      await appendFile(demos, `${formatDemoLine(demoFromRollout('bash', played, 'gold'))}\n`);
      const score = played.turns.at(-1)?.info.score;
      const log = toIntercodeLog({
        environment: 'bash', task: t, steps: played.turns.filter((s) => s.action !== 'submit'), reward: played.reward,
        info: { ...(score?.details ?? {}), eval_obs: `gold printed for ${t.id}`, reward: score?.parts ?? {} },
      });
      await writeEpisodeLog(trajectoriesDir, log);
    }
    return { evalDir, collectDir, trajectoriesDir, rollouts, demos };
  } finally {
    await server.close();
  }
}
