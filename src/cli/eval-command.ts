import type { Command } from 'commander';
import { createStrategy, knownPrices, OpenAiChatClient, parsePrices, STRATEGIES, CLIENT_DEFAULTS } from '../agents/index.js';
import { ConfigError } from '../errors.js';
import { runEval, type EvalSummary } from '../eval/index.js';
import { describeScheduler } from '../scheduler/index.js';
import { readRunSettings } from '../eval/journal.js';
import { addSchedulerFlags, type SchedulerFlags } from './scheduler-flags.js';
import { addThreadsFlag, commandSchedulerSettings, openCommandScheduler, type ThreadsFlags } from './command-scheduler.js';
import { addEnvFlags, experimentSettings, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { positiveInteger } from '../env/flag-values.js';
import { ENV_PLUGINS } from '../../envs/index.js';
import { Progress } from './progress.js';
import { windDownOnSignal } from '../sandbox/lifecycle/shutdown.js';
import { modelEndpoint, nonNegativeInteger } from './model-flags.js';
import { describeUnscored } from '../policy/index.js';
import { announceRunFolder, datasetFacts, engineFacts, openRunFolder, writeRunResult } from './run-folder.js';

interface EvalFlags extends CommonEnvFlags, SchedulerFlags, ThreadsFlags {
  env: string;
  strategy: string;
  turns: string;
  refineTurns: string;
  dialogueLimit?: string;
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  prices?: string;
  requestTimeout: string;
  retries: string;
  out?: string;
  limit?: string;
  json?: boolean;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const avg = (x: number | null) => (x === null ? 'n/a (none scored)' : x.toFixed(3));

function printSummary(s: EvalSummary): void {
  console.log(`episodes              ${s.episodes}`);
  console.log(`success rate          ${pct(s.successRate)}`);
  console.log(`average max reward    ${avg(s.avgMaxReward)}${s.notScored > 0 ? ` (of the ${s.episodes - s.notScored} scored)` : ''}`);
  console.log(`average turns         ${s.avgTurns.toFixed(2)}`);
  console.log(`invalid actions       ${pct(s.invalidActionRate)}`);
  for (const [hardness, g] of Object.entries(s.byHardness)) {
    console.log(`  ${hardness.padEnd(8)} ${String(g.episodes).padStart(5)} episodes  success ${pct(g.successRate)}  avg max reward ${avg(g.avgMaxReward)}`);
  }
  if (s.truncated > s.notScored) console.log(`cut off               ${s.truncated - s.notScored} episodes (scored up to the cut)`);
  if (s.notScored > 0) console.log(`not scored            ${describeUnscored(s.notScoredByReason)}`);
  const u = s.usage;
  const cost = u.cost_usd === null ? 'cost unknown (give --prices)' : `$${u.cost_usd.toFixed(4)}`;
  console.log(`model                 ${u.requests} requests (${u.retries} retried), ${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens, ${cost}`);
}

/** `intercode eval`: runs a prompting strategy with an OpenAI-compatible model on an env's tasks. */
export function registerEvalCommand(program: Command): void {
  const command = program
    .command('eval')
    .description(
      'evaluate an LLM with a prompting strategy (InterCode\'s protocol): resumable runs in --out, an InterCode result log, ' +
        'and the paper\'s summary',
    )
    .requiredOption('--env <env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .option('--out <dir>', 'run folder: settings, episodes.jsonl (resume point), the InterCode result log and result.json; give an existing one to resume it (default: a new runs/eval-<UTC time>/, under $INTERCODE_RUNS_DIR when set)')
    .option('--strategy <name>', `prompting strategy: ${Object.keys(STRATEGIES).join(', ')}`, 'try-again')
    .option('--turns <n>', 'turn limit (plan-solve: most plan steps carried out)', '10')
    .option('--refine-turns <n>', 'plan-solve: refinement turns after a plan that did not solve the task', '0')
    .option('--dialogue-limit <n>', 'keep only the n most recent messages after the opening ones (default: all)')
    .option('--model <name>', `model name (default: $OPENAI_MODEL, else ${CLIENT_DEFAULTS.model})`)
    .option('--base-url <url>', `OpenAI-compatible API base URL (default: $OPENAI_BASE_URL, else ${CLIENT_DEFAULTS.baseUrl})`)
    .option('--api-key <key>', 'API key (default: $OPENAI_API_KEY; prefer the variable, flags show in process lists)')
    .option('--prices <in,out>', 'USD per million input and output tokens (default: list prices of known OpenAI models)')
    .option('--request-timeout <seconds>', 'time limit of one model request', '60')
    .option('--retries <n>', 'retries of a request after 429, 5xx, timeouts and connection failures (exponential backoff)', '6')
    .option('--limit <n>', 'evaluate only the first n tasks')
    .option('--json', 'print one JSON object: {"episodes","successRate","avgMaxReward","avgTurns","invalidActionRate","byHardness","truncated","notScored","notScoredByReason","usage"}');
  addThreadsFlag(command);
  addSchedulerFlags(addEnvFlags(command, ENV_PLUGINS)).action(async (flags: EvalFlags, self: Command) => {
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const plugin = selectEnvPlugin(ENV_PLUGINS, '--env', flags.env, self);
    const turns = positiveInteger('--turns', flags.turns);
    const refineTurns = nonNegativeInteger('--refine-turns', flags.refineTurns);
    const engineSettings = commandSchedulerSettings(plugin, flags as EvalFlags & Record<string, unknown>);
    const retries = nonNegativeInteger('--retries', flags.retries);
    const timeoutSec = Number(flags.requestTimeout);
    if (!(timeoutSec > 0)) throw new ConfigError('--request-timeout', `must be a positive number of seconds, got "${flags.requestTimeout}"`);
    const dialogueLimit = flags.dialogueLimit === undefined ? undefined : positiveInteger('--dialogue-limit', flags.dialogueLimit);
    const modelName = flags.model ?? process.env.OPENAI_MODEL ?? CLIENT_DEFAULTS.model;
    const { baseUrl, apiKey } = modelEndpoint(flags, process.env);
    const prices = flags.prices ? parsePrices(flags.prices) : knownPrices(modelName);
    const model = new OpenAiChatClient({ baseUrl, model: modelName, timeoutMs: timeoutSec * 1000, retries, ...(apiKey ? { apiKey } : {}) });
    const strategy = createStrategy(flags.strategy, { model, prompt: plugin.agent.prompt, ...(prices ? { prices } : {}), ...(dialogueLimit ? { dialogueLimit } : {}), refineTurns });

    const limit = flags.limit === undefined ? undefined : positiveInteger('--limit', flags.limit);
    if (flags.out !== undefined) await readRunSettings(flags.out); // a broken run folder fails before any sandbox starts
    const startedAt = new Date();

    const opened = await openCommandScheduler(plugin, flags as EvalFlags & Record<string, unknown>, engineSettings, 'eval', log);
    const executor = opened.scheduler;
    const all = opened.tasks;
    const tasks = limit === undefined ? all : all.slice(0, limit);
    const out = openRunFolder('eval', flags.out);
    const settings = {
      ...experimentSettings(plugin, flags),
      strategy: strategy.name,
      turns,
      refineTurns,
      dialogueLimit: dialogueLimit ?? null,
      model: modelName,
    };
    const progress = new Progress('episodes', tasks.length);
    const stop = new AbortController();
    const onSignal = () => {
      log('\nstopping: episodes in flight finish, then the log is written; run the same command again to resume');
      stop.abort();
    };
    const unregister = windDownOnSignal(onSignal);
    let result;
    try {
      result = await runEval({
        envName: plugin.name,
        stepScoring: plugin.agent.stepScoring,
        dataset: flags.data ?? `(built-in ${plugin.name} tasks)`,
        turns,
        strategy,
        model: modelName,
        tasks,
        executor,
        out,
        settings,
        signal: stop.signal,
        onProgress: ({ done, solved }) => progress.update(done, `success ${solved}/${done} (${pct(solved / Math.max(1, done))})`),
      });
    } finally {
      progress.stop();
      unregister();
      await executor.close();
      opened.releaseEngines();
    }
    const again = flags.out === undefined ? `run again with --out ${out} to resume` : 'run again to resume';
    log(`result log: ${result.logPath} (${result.played} episodes played now, ${result.resumed} resumed${result.remaining ? `, ${result.remaining} left: ${again}` : ''})`);
    const { episodes, successRate, avgMaxReward, avgTurns, invalidActionRate, byHardness, truncated, notScored, notScoredByReason, usage } = result.summary;
    const figures = { episodes, successRate, avgMaxReward, avgTurns, invalidActionRate, byHardness, truncated, notScored, notScoredByReason, usage };
    writeRunResult(out, { command: 'eval', startedAt, figures, dataset: datasetFacts(flags.data, tasks), engine: { ...engineFacts(flags), episodes: describeScheduler(executor) }, files: { episodes: 'episodes.jsonl', log: result.logPath } });
    if (flags.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
    else printSummary(result.summary);
    announceRunFolder(out, flags.json);
    if (result.remaining > 0) process.exitCode = 130;
  });
}
