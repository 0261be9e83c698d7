import type { Command } from 'commander';
import { createInterface } from 'node:readline/promises';
import { createBashEnv } from '../../envs/bash/index.js';
import { addBashFlags, bashOptionsFrom, requireBashEnv, type BashFlags } from './env-options.js';

interface PlayFlags extends BashFlags {
  task?: string;
  tool?: boolean;
}

const HELP = `Type bash commands. "submit" scores the episode, "skip" gives up; then the next task starts.
":task N" jumps to task N, ":help" shows this, Ctrl-D quits.`;

/** `intercode play bash`: a human REPL over an episode (history with the arrow keys). */
export function registerPlayCommand(program: Command): void {
  const command = program
    .command('play')
    .argument('<env>', 'environment: bash')
    .description('play tasks yourself in a sandbox: see the query, type commands, submit to see the reward and its parts')
    .option('--task <n>', 'first task index (default 0)')
    .option('--tool', 'no dataset: a plain sandboxed shell');
  addBashFlags(command, 'session').action(async (envName: string, flags: PlayFlags) => {
    requireBashEnv('<env>', envName);
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const env = await createBashEnv({ ...bashOptionsFrom(flags, log), ...(flags.tool ? { data: null } : {}) });
    const rl = createInterface({ input: process.stdin, output: process.stdout, historySize: 1000, terminal: process.stdin.isTTY });
    let index = Number(flags.task ?? 0);
    const start = async () => {
      const { observation, info } = await env.reset(info0(index, env.tasks.length));
      console.log(info.task ? `\n── task ${info.task.index} of ${env.tasks.length} ──\n${observation}` : '\n── tool mode: a sandboxed shell ──');
    };
    const info0 = (i: number, n: number) => (n === 0 ? {} : { task: ((i % n) + n) % n });
    try {
      console.log(HELP);
      await start();
      for (;;) {
        let line: string;
        try {
          line = await rl.question('$ ');
        } catch {
          break;
        }
        const action = line.trim();
        if (action === '') continue;
        if (action === ':help') { console.log(HELP); continue; }
        if (action.startsWith(':task ')) { index = Number(action.slice(6)); await start(); continue; }
        const result = await env.step(line);
        if (result.terminated || result.truncated) {
          const score = result.info.score;
          if (result.truncated) console.log(`episode truncated: ${result.info.truncation?.message}`);
          else console.log(`reward ${result.reward.toFixed(2)}  ${Object.entries(score?.parts ?? {}).map(([k, v]) => `${k}=${v}`).join('  ')}`);
          if (score?.details.eval_obs !== undefined) console.log(`gold output:\n${String(score.details.eval_obs)}`);
          index += 1;
          await start();
          continue;
        }
        process.stdout.write(result.observation.endsWith('\n') || result.observation === '' ? result.observation : `${result.observation}\n`);
      }
    } finally {
      rl.close();
      await env.close();
    }
  });
}
