import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { formatRecord, parseRolloutFormat, readEpisodeTurns, readRolloutRecords, ROLLOUT_FORMATS, toIntercodeLayout } from '../rollouts/index.js';
import { nonNegativeInteger } from './model-flags.js';
import { packageVersion } from './package-version.js';

interface ExportFlags {
  format: string;
  out: string;
  sample: string;
  json?: boolean;
}

/** `intercode export FILE --format F --out PATH`: rollout records to a trainer format, or any rollout file back to InterCode's log layout. */
export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .argument('<rollouts>', 'a rollout file: `collect --policy llm:… --format jsonl` records (any --format), or hf-messages/ATIF lines (--format intercode)')
    .description(
      'convert LLM rollouts: records to hf-messages or ATIF v1.4 (one episode per line), or rollouts in any format back to ' +
        "InterCode's log layout (JSON keyed by task index) that `intercode replay` re-scores",
    )
    .requiredOption('--format <f>', `${ROLLOUT_FORMATS.join(', ')}, or intercode (InterCode's evaluation-log layout)`)
    .requiredOption('--out <file>', 'the file to write (replaced)')
    .option('--sample <k>', 'intercode: which sample of each task to keep (InterCode logs hold one episode per task)', '0')
    .option('--json', 'print one JSON object: {"episodes","format","out"}')
    .action((file: string, flags: ExportFlags) => {
      let episodes: number;
      if (flags.format === 'intercode') {
        const layout = toIntercodeLayout(readEpisodeTurns(file), nonNegativeInteger('--sample', flags.sample));
        episodes = Object.keys(layout).length;
        if (episodes === 0) throw new ConfigError('--sample', `no episode of ${file} has sample index ${flags.sample}`);
        writeFileSync(flags.out, `${JSON.stringify(layout, null, 2)}\n`);
      } else {
        const format = parseRolloutFormat(flags.format);
        const records = readRolloutRecords(file);
        writeFileSync(flags.out, records.map((r) => `${formatRecord(r, format, packageVersion())}\n`).join(''));
        episodes = records.length;
      }
      if (flags.json) process.stdout.write(`${JSON.stringify({ episodes, format: flags.format, out: flags.out })}\n`);
      else console.log(`${episodes} episodes written to ${flags.out} (${flags.format})`);
    });
}
