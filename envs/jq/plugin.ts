import { readFileSync } from 'node:fs';
import { SUBMIT_AS_IS, type EnvPrompt } from '../../src/agents/index.js';
import { loadDataset, type Task } from '../../src/datasets/index.js';
import { timeoutMs } from '../../src/env/flag-values.js';
import { SandboxEnv, type EpisodeState, type SandboxEnvConfig } from '../../src/env/index.js';
import { DatasetError } from '../../src/errors.js';
import { packEntries } from '../../src/images/tar.js';
import { packagePath } from '../../src/package-path.js';
import type { Workspace } from '../../src/pool/index.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, EngineSet, ShellSession, type Sandbox } from '../../src/sandbox/index.js';
import { shellQuote } from '../../src/sandbox/shell/shell-script.js';
import { bashRuntimeRecipe } from '../bash/images.js';
import { firstDistinct, MAX_DERIVED } from '../exploration.js';
import type { CommonEnvFlags, EnvPlugin } from '../plugin.js';
import { jqScore } from './reward.js';

/** The shell line applying `filter` to the episode's document: the filter goes in on stdin, never as an argument jq could take for an option. */
const applying = (filter: string) => `printf '%s' ${shellQuote(filter)} | jq -c -f /dev/stdin /jq/input.json`;

/** Questions about a JSON document (the task's `input`, put in read-only at reset). An action is a jq filter applied to it, never a shell
 * line. The gold's output is taken at reset, before the agent acts, and kept here, outside the sandbox; the last filter's output is scored. */
export class JqEnv extends SandboxEnv {
  readonly id = 'intercode/jq-v1';
  override readonly sharesWorkspaces = true;
  readonly logName = 'ic_jq';
  private expected = '';

  constructor(protected override readonly config: SandboxEnvConfig & { dataFile: string; timeoutMs?: number }) {
    super(config);
  }

  protected async openRunner(sandbox: Sandbox) {
    const shell = await ShellSession.open(sandbox, this.config.timeoutMs ? { timeoutMs: this.config.timeoutMs } : {});
    return { run: (filter: string, options = {}) => shell.run(applying(filter), options), cwd: '/', close: () => shell.close() };
  }

  /** Puts the document in and takes the gold's output. @throws DatasetError when the gold fails on it. */
  protected override async prepareEpisode({ sandbox, control }: Workspace, task: Task | null): Promise<void> {
    if (!task) return;
    const content = Buffer.from(JSON.stringify(task.metadata.input));
    await sandbox.putArchive(await packEntries([{ name: 'jq', type: 'directory', mode: 0o555 }, { name: 'jq/input.json', type: 'file', content, mode: 0o444 }]), '/');
    const gold = await control.run(applying(String(task.gold)));
    if (gold.exitCode !== 0) throw new DatasetError({ file: this.config.dataFile, record: task.index + 1, field: 'gold' }, `jq failed: ${gold.output}`);
    this.expected = gold.output;
  }

  protected async score({ steps }: EpisodeState) {
    return jqScore(steps.at(-1)?.observation ?? '', this.expected);
  }
}

/** `count` envs over `--data` (default: the built-in tasks) on the bash image, which has jq. @throws DatasetError for a task without its `input`. */
async function createJqEnvs(flags: CommonEnvFlags, count: number, engines: EngineSet, log: (line: string) => void): Promise<JqEnv[]> {
  const dataFile = flags.data ?? BUILTIN_JQ_TASKS;
  const dataset = await loadDataset(dataFile);
  for (const task of dataset) if (task.metadata.input === undefined) throw new DatasetError({ file: dataFile, record: task.index + 1, field: 'input' }, 'missing: the JSON document the filters read');
  const spec = { image: await engines.ensureImage(await bashRuntimeRecipe(), log), hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES };
  const [runtime, timeout] = [await engines.runtime(), timeoutMs(flags.timeout)];
  return Array.from({ length: count }, () => new JqEnv({ runtime, spec, dataset, dataFile, ...(timeout ? { timeoutMs: timeout } : {}) }));
}

/** What LLM strategies are told, from envs/jq/prompt.json (its two examples are lists of lines there). */
const prompt = JSON.parse(readFileSync(packagePath('envs', 'jq', 'prompt.json'), 'utf8')) as Omit<EnvPrompt, 'reactExample' | 'planExample'> & Record<'reactExample' | 'planExample', string[]>;

/** The jq environment, the worked example of docs/new-env.md. */
/** The built-in jq tasks. */
export const BUILTIN_JQ_TASKS = packagePath('datasets', 'jq', 'ic_jq.json');

export const jqPlugin: EnvPlugin = {
  name: 'jq',
  builtInTasks: BUILTIN_JQ_TASKS,
  spec: { id: 'intercode/jq-v1', description: "Questions about a JSON document answered with jq filters", create: async (flags: CommonEnvFlags = {}) => (await createJqEnvs(flags, 1, EngineSet.local(), () => undefined))[0]! },
  flags: [],
  createEnvs: (flags, count, { log, engines }) => createJqEnvs(flags, count, engines, log),
  goldActions: (task) => [String(task.gold), 'submit'],
  agent: { prompt: { ...prompt, reactExample: prompt.reactExample.join('\n'), planExample: prompt.planExample.join('\n') }, stepScoring: SUBMIT_AS_IS },
  training: {
    // The document's shape; then each object key an output shows ("key":), looked up wherever it lies.
    exploration: { fixed: ['.', 'keys', 'length', '.[0]', 'map(keys)'], fromObservation: (obs) => firstDistinct([...obs.matchAll(/"([A-Za-z_]\w*)":/g)].map((m) => `.. | .${m[1]}? // empty`), MAX_DERIVED) },
  },
  images: { list: () => [{ name: 'jq', usedBy: 'every jq command (the bash env\'s runtime image, which has jq)', byDefault: true, recipe: () => bashRuntimeRecipe() }] },
};
