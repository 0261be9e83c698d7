import type { Command } from 'commander';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ENV_PLUGINS } from '../../envs/index.js';
import { loadDataset } from '../datasets/index.js';
import { findImage } from '../images/image-builder.js';
import { connectEngine } from '../sandbox/docker/engine.js';
import { RESULT_FILE, RUNS_ROOT_VARIABLE } from './run-folder.js';

interface EnvListing {
  name: string;
  id: string;
  /** Tasks of the built-in dataset; null where the env needs --data. */
  builtinTasks: number | null;
  /** built / missing (what is missing) / unknown (no engine answered) / null: built on first use. */
  image: { state: 'built'; tag: string } | { state: 'missing'; missing: string } | { state: 'unknown'; reason: string } | null;
}

interface RunListing {
  dir: string;
  /** What made it: result.json's command, "train" for a folder with metrics.jsonl, "eval" for an eval --out folder. */
  command: string;
  startedAt: string | null;
  /** A few headline figures, where result.json has them. */
  figures: Record<string, unknown>;
}

const HEADLINE = ['episodes', 'solved', 'successRate', 'meanReward', 'avgMaxReward', 'agreement', 'notScored'];

/** Run folders directly under `root`: those with a result.json, an eval journal or training metrics. */
function runsUnder(root: string): RunListing[] {
  if (!existsSync(root) || !statSync(root).isDirectory()) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e): RunListing[] => {
      const dir = join(root, e.name);
      const resultPath = join(dir, RESULT_FILE);
      if (existsSync(resultPath)) {
        try {
          const result = JSON.parse(readFileSync(resultPath, 'utf8')) as { command?: string; startedAt?: string; figures?: Record<string, unknown> };
          const figures = Object.fromEntries(HEADLINE.filter((k) => result.figures?.[k] !== undefined).map((k) => [k, result.figures![k]]));
          return [{ dir, command: result.command ?? '?', startedAt: result.startedAt ?? null, figures }];
        } catch {
          return [{ dir, command: '? (result.json unreadable)', startedAt: null, figures: {} }];
        }
      }
      if (existsSync(join(dir, 'metrics.jsonl'))) return [{ dir, command: 'train', startedAt: null, figures: {} }];
      if (existsSync(join(dir, 'episodes.jsonl'))) return [{ dir, command: 'eval', startedAt: null, figures: {} }];
      return [];
    })
    .sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? '') || a.dir.localeCompare(b.dir));
}

async function listEnvs(): Promise<EnvListing[]> {
  let engine: Awaited<ReturnType<typeof connectEngine>> | string;
  try {
    engine = await connectEngine(undefined, 3_000);
  } catch (error) {
    engine = error instanceof Error ? error.message.split('.')[0]! : String(error);
  }
  const envs: EnvListing[] = [];
  for (const plugin of ENV_PLUGINS) {
    const builtinTasks = plugin.builtInTasks ? (await loadDataset(plugin.builtInTasks)).length : null;
    let image: EnvListing['image'] = null;
    // The env's main image (named after it), as `images build` builds it.
    const recipe = plugin.images.list({}).find((i) => i.name === plugin.name)?.recipe;
    if (recipe) {
      if (typeof engine === 'string') image = { state: 'unknown', reason: engine };
      else {
        const found = await findImage(engine, await recipe());
        image = found.present ? { state: 'built', tag: found.tag } : { state: 'missing', missing: found.missing };
      }
    }
    envs.push({ name: plugin.name, id: plugin.spec.id, builtinTasks, image });
  }
  return envs;
}

/** `intercode list`: what there is to run and what has been run. */
export function registerListCommand(program: Command): void {
  program
    .command('list')
    .description(`list the envs (their ids, built-in tasks, whether their images are built) and the runs found (in runs/ or $${RUNS_ROOT_VARIABLE}, and checkpoints/)`)
    .option('--json', 'print one JSON object: {"envs":[{"name","id","builtinTasks","image"}],"runs":[{"dir","command","startedAt","figures"}]}; image is null for envs whose image is built on first use')
    .action(async (flags: { json?: boolean }) => {
      const envs = await listEnvs();
      const runs = [...runsUnder(process.env[RUNS_ROOT_VARIABLE] || 'runs'), ...runsUnder('checkpoints')];
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ envs, runs })}\n`);
        return;
      }
      console.log('envs');
      for (const e of envs) {
        const tasks = e.builtinTasks === null ? 'tasks: give --data' : `${e.builtinTasks} built-in tasks`;
        const image = e.image === null ? 'image built on first use' : e.image.state === 'built' ? `image ${e.image.tag}` : e.image.state === 'missing' ? `image missing (${e.image.missing}): intercode images build ${e.name}` : `image unknown (${e.image.reason})`;
        console.log(`  ${e.name.padEnd(8)} ${e.id.padEnd(20)} ${tasks.padEnd(20)} ${image}`);
      }
      console.log(runs.length === 0 ? 'runs: none yet (commands that write results put them in runs/)' : 'runs');
      for (const r of runs) {
        const figures = Object.entries(r.figures).map(([k, v]) => `${k} ${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(3) : JSON.stringify(v)}`).join(', ');
        console.log(`  ${r.dir}  ${r.command}${r.startedAt ? ` ${r.startedAt}` : ''}${figures ? `  ${figures}` : ''}`);
      }
      if (runs.length > 0) console.log(`look at them: intercode view ${process.env[RUNS_ROOT_VARIABLE] || 'runs'}`);
    });
}
