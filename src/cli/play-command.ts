import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { createInterface } from 'node:readline/promises';
import { openCommandEnvs } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { ENV_PLUGINS } from '../../envs/index.js';

interface PlayFlags extends CommonEnvFlags {
  task?: string;
  tool?: boolean;
}

const HELP = `Type actions (shell commands, SQL, code… as the env takes). "submit" scores the episode, "skip" gives up; then the next task starts.
":task N" jumps to task N, ":help" shows this. Ctrl-C stops a running action as its time limit would (the episode goes on); at an empty prompt Ctrl-C twice or Ctrl-D quits.`;

/** The exit status of a session quit with Ctrl-C (128 + SIGINT), as a shell gives it. */
const QUIT_BY_INTERRUPT = 130;

/**
 * A task index typed by a person, checked against the dataset.
 * @returns the index, or why it is refused (naming the range).
 */
function taskIndex(text: string, count: number): number | string {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return `"${text}" is not a task index: give a whole number from 0 to ${count - 1}`;
  const index = Number(trimmed);
  return index < count ? index : `there is no task ${index}: this dataset's tasks are 0 to ${count - 1} (${count} tasks)`;
}

/** `intercode play <env>`: a human REPL over an episode (history with the arrow keys). */
export function registerPlayCommand(program: Command): void {
  const command = program
    .command('play')
    .argument('<env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .description('play tasks yourself in a sandbox: see the query, type commands, submit to see the reward and its parts; Ctrl-C stops a running action, twice at an empty prompt quits (exit 130)')
    .option('--task <n>', 'first task index, 0 to the number of tasks - 1 (default 0)')
    .option('--tool', 'no dataset: a plain sandbox (envs that have a tool mode)');
  addEnvFlags(command, ENV_PLUGINS).action(async (envName: string, flags: PlayFlags, self: Command) => {
    const plugin = selectEnvPlugin(ENV_PLUGINS, '<env>', envName, self);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    if (flags.task !== undefined && !/^\d+$/.test(flags.task.trim())) throw new ConfigError('--task', `must be a task index (a whole number from 0), got "${flags.task}"`);
    const opened = await openCommandEnvs(plugin, flags as PlayFlags & Record<string, unknown>, 1, 'play', log);
    const [env] = opened.envs;
    if (!env) throw new Error(`${plugin.name} made no env`);
    let index = 0;
    if (flags.task !== undefined) {
      const checked = env.tasks.length === 0 ? 'needs a dataset (tool mode has none)' : taskIndex(flags.task, env.tasks.length);
      if (typeof checked === 'string') {
        await env.close();
        opened.release();
        throw new ConfigError('--task', checked);
      }
      index = checked;
    }
    const rl = createInterface({ input: process.stdin, output: process.stdout, historySize: 1000, terminal: process.stdin.isTTY });
    // The iterator buffers from here on: piped input that arrives while a sandbox starts is not lost.
    const lines = rl[Symbol.asyncIterator]();
    const start = async () => {
      const { observation, info } = await env.reset(env.tasks.length === 0 ? {} : { task: index });
      console.log(info.task ? `\n── task ${info.task.index} of ${env.tasks.length} ──\n${observation}` : '\n── tool mode: a sandboxed shell ──');
    };
    // Ctrl-C: stops the running action; at the prompt, clears a typed line, and on an empty
    // one asks, the second in a row quitting. readline reports it while it owns a terminal
    // (with no listener it would pause its input: every later line lost); the process gets
    // SIGINT itself when the input is piped.
    let running: AbortController | undefined;
    let quitAsked = false;
    let quitting = false;
    const quit = () => {
      quitting = true;
      process.exitCode = QUIT_BY_INTERRUPT;
      rl.close();
    };
    const onInterrupt = () => {
      if (running && !running.signal.aborted) {
        process.stdout.write('^C\n');
        running.abort();
        return;
      }
      if (running) return quit(); // a second Ctrl-C while an action that cannot be stopped runs on
      if (rl.line !== '') {
        rl.write(null, { ctrl: true, name: 'u' });
        process.stdout.write('^C\n');
        rl.prompt();
        return;
      }
      if (quitAsked) {
        process.stdout.write('^C\n');
        return quit();
      }
      quitAsked = true;
      process.stdout.write('^C\n(Ctrl-C again or Ctrl-D to quit)\n');
      rl.prompt();
    };
    rl.on('SIGINT', onInterrupt);
    process.on('SIGINT', onInterrupt);
    try {
      console.log(HELP);
      await start();
      rl.setPrompt('$ ');
      rl.prompt();
      for (let next = await lines.next(); !next.done && !quitting; next = await lines.next()) {
        quitAsked = false;
        const line = next.value;
        const action = line.trim();
        if (action === ':help') console.log(HELP);
        else if (action.startsWith(':task ')) {
          const checked = env.tasks.length === 0 ? 'tool mode has no tasks' : taskIndex(action.slice(6), env.tasks.length);
          if (typeof checked === 'string') console.log(checked);
          else {
            index = checked;
            await start();
          }
        } else if (action !== '') await play(line);
        if (!quitting) rl.prompt();
      }
    } finally {
      process.off('SIGINT', onInterrupt);
      rl.close();
      await env.close();
      opened.release();
    }

    async function play(line: string): Promise<void> {
      running = new AbortController();
      let result: Awaited<ReturnType<typeof env.step>>;
      try {
        result = await env!.step(line, { signal: running.signal });
      } finally {
        running = undefined;
      }
      if (!result.terminated && !result.truncated) {
        process.stdout.write(result.observation.endsWith('\n') || result.observation === '' ? result.observation : `${result.observation}\n`);
        return;
      }
      const score = result.info.score;
      const cut = result.info.truncation;
      if (result.truncated) console.log(`episode truncated, not scored: ${cut?.reason ?? 'truncated'} — ${cut?.message ?? 'no reason given'}`);
      else console.log(`reward ${result.reward.toFixed(2)}  ${Object.entries(score?.parts ?? {}).map(([k, v]) => `${k}=${v}`).join('  ')}`);
      if (score?.details.eval_obs !== undefined) console.log(`gold output:\n${String(score.details.eval_obs)}`);
      if (quitting) return;
      index = (index + 1) % Math.max(1, env!.tasks.length);
      await start();
    }
  });
}
