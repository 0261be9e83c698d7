import type { Command } from 'commander';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ConfigError } from '../errors.js';

/** Where a run named on the command line lives: a folder, a metrics file, or a name under checkpoints/. */
function locateMetrics(run: string): { name: string; metrics: string; dir: string } {
  const candidates = [run, join('checkpoints', run)];
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    if (statSync(path).isDirectory()) {
      const metrics = join(path, 'metrics.jsonl');
      if (existsSync(metrics)) return { name: basename(resolve(path)), metrics, dir: path };
    } else {
      return { name: basename(resolve(path, '..')), metrics: path, dir: join(path, '..') };
    }
  }
  throw new ConfigError('<run>', `found no metrics.jsonl at ${candidates.join(' or ')}`);
}

/** `intercode plot RUN`: the run's learning curves as a self-contained HTML page. */
export function registerPlotCommand(program: Command): void {
  program
    .command('plot')
    .argument('<run>', 'a run folder, its metrics.jsonl, or a run name under checkpoints/')
    .description('draw a training run\'s learning curves (loss, success rate, mean reward, env steps/s) to a self-contained HTML page')
    .option('--out <file>', 'where to write the page (default: RUN/curves.html)')
    .option('--json', 'print one JSON object: {"out","iterations"}')
    .action(async (run: string, flags: { out?: string; json?: boolean }) => {
      const { readMetrics } = await import('../../training/run/run-files.js');
      const { renderLearningCurves } = await import('../../training/plot/learning-curves.js');
      const found = locateMetrics(run);
      const metrics = readMetrics(found.metrics);
      if (metrics.length === 0) throw new ConfigError('<run>', `${found.metrics} holds no metric records yet`);
      const out = flags.out ?? join(found.dir, 'curves.html');
      writeFileSync(out, renderLearningCurves(found.name, metrics));
      if (flags.json) process.stdout.write(`${JSON.stringify({ out, iterations: metrics.length })}\n`);
      else console.log(`wrote ${out} (${metrics.length} iterations); open it in a browser`);
    });
}
