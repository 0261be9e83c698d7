import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { unwrapped } from '../env/task-env-wrapper.js';
import { ConfigError } from '../errors.js';
import { formatRecord, parseRolloutFormat, readEpisodeTurns, readRolloutRecords, ROLLOUT_FORMATS, toIntercodeLayout } from '../rollouts/index.js';
import { openCommandEnvs } from './command-scheduler.js';
import { addEnvFlags, selectEnvPlugin, type CommonEnvFlags } from './env-cli.js';
import { ENV_PLUGINS, writeHarborTask } from '../../envs/index.js';
import { nonNegativeInteger } from './model-flags.js';
import { packageVersion } from './package-version.js';

interface ExportFlags extends CommonEnvFlags {
  format: string;
  out: string;
  sample: string;
  json?: boolean;
}

/**
 * `intercode export FILE --format F --out PATH`: rollout records to a trainer format, or any
 * rollout file back to InterCode's log layout; `intercode export ENV --format harbor --out DIR`:
 * every task of an env's dataset as a Harbor task directory.
 */
export function registerExportCommand(program: Command): void {
  const command = program
    .command('export')
    .argument(
      '<source>',
      'a rollout file: `collect --policy llm:… --format jsonl` records (any --format), or hf-messages/ATIF lines (--format intercode); ' +
        `with --format harbor, an env (${ENV_PLUGINS.filter((c) => c.harbor).map((c) => c.name).join(', ')}) whose tasks (--data, default built-in) are exported`,
    )
    .description(
      'convert LLM rollouts: records to hf-messages or ATIF v1.4 (one episode per line), or rollouts in any format back to ' +
        "InterCode's log layout (JSON keyed by task index) that `intercode replay` re-scores; or export an env's tasks as Harbor task directories",
    )
    .requiredOption('--format <f>', `${ROLLOUT_FORMATS.join(', ')}, intercode (InterCode's evaluation-log layout), or harbor (task directories)`)
    .requiredOption('--out <file>', 'the file to write (replaced); harbor: the folder the task directories are written in')
    .option('--sample <k>', 'intercode: which sample of each task to keep (InterCode logs hold one episode per task)', '0')
    .option('--json', 'print one JSON object: {"episodes","format","out"} (harbor: {"tasks","format","out"})');
  addEnvFlags(command, ENV_PLUGINS).action(async (source: string, flags: ExportFlags, self: Command) => {
    if (flags.format === 'harbor') {
      const tasks = await exportHarbor(source, flags, self);
      if (flags.json) process.stdout.write(`${JSON.stringify({ tasks, format: flags.format, out: flags.out })}\n`);
      else console.log(`${tasks} task directories written to ${flags.out} (harbor)`);
      return;
    }
    let episodes: number;
    if (flags.format === 'intercode') {
      const layout = toIntercodeLayout(readEpisodeTurns(source), nonNegativeInteger('--sample', flags.sample));
      episodes = Object.keys(layout).length;
      if (episodes === 0) throw new ConfigError('--sample', `no episode of ${source} has sample index ${flags.sample}`);
      writeFileSync(flags.out, `${JSON.stringify(layout, null, 2)}\n`);
    } else {
      const format = parseRolloutFormat(flags.format);
      const records = readRolloutRecords(source);
      writeFileSync(flags.out, records.map((r) => `${formatRecord(r, format, packageVersion())}\n`).join(''));
      episodes = records.length;
    }
    if (flags.json) process.stdout.write(`${JSON.stringify({ episodes, format: flags.format, out: flags.out })}\n`);
    else console.log(`${episodes} episodes written to ${flags.out} (${flags.format})`);
  });
}

/**
 * Writes every task of env `envName` (its image built, its golds' outcomes read where the
 * verifier needs them) as a Harbor task directory under `flags.out`.
 * @returns how many were written. @throws ConfigError for an env that is not exported.
 */
async function exportHarbor(envName: string, flags: ExportFlags, self: Command): Promise<number> {
  const plugin = selectEnvPlugin(ENV_PLUGINS, '<source>', envName, self);
  if (!plugin.harbor) throw new ConfigError('<source>', `harbor: the ${plugin.name} env's tasks are not exported (exported: ${ENV_PLUGINS.filter((c) => c.harbor).map((c) => c.name).join(', ')})`);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const opened = await openCommandEnvs(plugin, flags as ExportFlags & Record<string, unknown>, 1, 'run', log);
  const [env] = opened.envs;
  try {
    await mkdir(flags.out, { recursive: true });
    for (const task of env!.tasks) await writeHarborTask(flags.out, await plugin.harbor.task(unwrapped(env!), task, flags as ExportFlags & Record<string, unknown>));
    return env!.tasks.length;
  } finally {
    await env!.close();
    opened.release();
  }
}
