import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { createInterface } from 'node:readline/promises';
import { commandEngines, releaseEngines } from './engine-flag.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { ENV_PLUGINS } from '../../envs/index.js';

interface PlayFlags extends CommonEnvFlags {
  task?: string;
  tool?: boolean;
}

const HELP = `Type actions (shell commands, SQL, code… as the env takes). "submit" scores the episode, "skip" gives up; then the next task starts.
":task N" jumps to task N, ":help" shows this, Ctrl-D quits.`;

/** `intercode play <env>`: a human REPL over an episode (history with the arrow keys). */
export function registerPlayCommand(program: Command): void {
  const command = program
    .command('play')
    .argument('<env>', `environment: ${ENV_PLUGINS.map((c) => c.name).join(', ')}`)
    .description('play tasks yourself in a sandbox: see the query, type commands, submit to see the reward and its parts')
    .option('--task <n>', 'first task index (default 0)')
    .option('--tool', 'no dataset: a plain sandbox (envs that have a tool mode)');
  addEnvFlags(command, ENV_PLUGINS).action(async (envName: string, flags: PlayFlags, self: Command) => {
    const plugin = selectEnvPlugin(ENV_PLUGINS, '<env>', envName, self);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    if (flags.task !== undefined && !/^-?\d+$/.test(flags.task.trim())) throw new ConfigError('--task', `must be an integer task index, got "${flags.task}"`);
    const engines = commandEngines(flags, log);
    const [env] = await plugin.createEnvs(flags as PlayFlags & Record<string, unknown>, 1, { purpose: 'play', log, engines });
    if (!env) throw new Error(`${plugin.name} made no env`);
    const rl = createInterface({ input: process.stdin, output: process.stdout, historySize: 1000, terminal: process.stdin.isTTY });
    // The iterator buffers from here on: piped input that arrives while a sandbox starts is not lost.
    const lines = rl[Symbol.asyncIterator]();
    let index = Number(flags.task ?? 0);
    const start = async () => {
      const { observation, info } = await env.reset(info0(index, env.tasks.length));
      console.log(info.task ? `\n── task ${info.task.index} of ${env.tasks.length} ──\n${observation}` : '\n── tool mode: a sandboxed shell ──');
    };
    const info0 = (i: number, n: number) => (n === 0 ? {} : { task: ((i % n) + n) % n });
    try {
      console.log(HELP);
      await start();
      rl.setPrompt('$ ');
      rl.prompt();
      for (let next = await lines.next(); !next.done; next = await lines.next()) {
        const line = next.value;
        const action = line.trim();
        if (action === ':help') console.log(HELP);
        else if (action.startsWith(':task ')) {
          index = Number(action.slice(6));
          await start();
        } else if (action !== '') await play(line);
        rl.prompt();
      }
    } finally {
      rl.close();
      await env.close();
      releaseEngines(engines, log);
    }

    async function play(line: string): Promise<void> {
      const result = await env!.step(line);
      if (!result.terminated && !result.truncated) {
        process.stdout.write(result.observation.endsWith('\n') || result.observation === '' ? result.observation : `${result.observation}\n`);
        return;
      }
      const score = result.info.score;
      const cut = result.info.truncation;
      if (result.truncated) console.log(`episode truncated, not scored: ${cut?.reason ?? 'truncated'} — ${cut?.message ?? 'no reason given'}`);
      else console.log(`reward ${result.reward.toFixed(2)}  ${Object.entries(score?.parts ?? {}).map(([k, v]) => `${k}=${v}`).join('  ')}`);
      if (score?.details.eval_obs !== undefined) console.log(`gold output:\n${String(score.details.eval_obs)}`);
      index += 1;
      await start();
    }
  });
}
