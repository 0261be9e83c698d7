import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { commandExists } from '../setup/host-facts.js';
import type { TrainingRun } from '../view/index.js';

interface ViewFlags {
  port: string;
  open?: boolean;
  static?: string;
  json?: boolean;
}

/** Where runs are looked for when no PATH is given: the folders commands write to by default. */
export const DEFAULT_VIEW_PATHS = ['runs', 'checkpoints'];

/** The `plot` command's page for a training run (drawn on demand, never written into the run). */
async function plotRenderer(): Promise<(run: TrainingRun) => string> {
  const { readMetrics } = await import('../../training/run/run-files.js');
  const { renderLearningCurves } = await import('../../training/plot/learning-curves.js');
  return (run) => renderLearningCurves(run.name, readMetrics(run.metrics));
}

/** `intercode view [PATH…]`: a local web page over every run, file and episode under PATH. */
export function registerViewCommand(program: Command): void {
  program
    .command('view')
    .argument('[paths...]', `run folders and files: eval --out folders, collect outputs (any format), --trajectories folders, training runs (default: ${DEFAULT_VIEW_PATHS.join(' and ')}, where present)`)
    .description(
      'browse runs and episodes in a local web page: runs with their figures, each episode\'s task, turns (action, observation, reward and its parts, time), ' +
        'gold and why it ended, groups side by side, filters; large files are paged; served on 127.0.0.1 only, to this machine only',
    )
    .option('--port <port>', 'TCP port on 127.0.0.1 (0: any free one)', '8777')
    .option('--open', 'open the page in the desktop\'s browser (xdg-open)')
    .option('--static <dir>', 'write the pages as a static folder (new or empty) instead of serving them')
    .option('--json', 'print one JSON object: {"url"} once serving; with --static {"dir","pages","episodes"}')
    .action(async (paths: string[], flags: ViewFlags) => {
      const { ViewServer, writeStaticSite } = await import('../view/index.js');
      const given = paths.length > 0;
      const roots = given ? paths : DEFAULT_VIEW_PATHS.filter((p) => existsSync(p));
      if (roots.length === 0) throw new ConfigError('[paths...]', `none given, and no ${DEFAULT_VIEW_PATHS.join(' or ')} folder here: name run folders or files (intercode view my-run/)`);
      const renderPlot = await plotRenderer();
      if (flags.static !== undefined) {
        const result = await writeStaticSite({ dir: flags.static, paths: roots, base: process.cwd(), renderPlot, onProgress: (line) => process.stderr.write(`${line}\n`) });
        if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
        else console.log(`wrote ${result.pages} pages (${result.episodes} episodes) to ${result.dir}: open ${result.dir}/index.html in a browser`);
        return;
      }
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('--port', `must be an integer 0–65535, got "${flags.port}"`);
      const server = await ViewServer.start({ paths: roots, base: process.cwd(), port, renderPlot });
      if (flags.json) process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
      else console.log(`intercode view: ${server.url} (this machine only; Ctrl-C stops)`);
      if (flags.open) {
        if (commandExists('xdg-open')) spawn('xdg-open', [server.url], { stdio: 'ignore', detached: true }).unref();
        else process.stderr.write(`no xdg-open here: open ${server.url} in a browser\n`);
      }
      // Ctrl-C or SIGTERM: stop serving and exit as a shell reports the signal (130, 143).
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
      process.exitCode = signal === 'SIGINT' ? 130 : 143;
    });
}
