import { realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import type { EnvConstruction } from '../../envs/index.js';
import { GoldsFailingError } from '../errors.js';

/** `run` checks golds: fewer than this share of the scored ones solving their task is a mismatch, not a measurement. */
export const GOLD_CHECK_SHARE = 0.5;

/** The flag that turns the check off (deliberate measurement of golds that may fail). */
export const ALLOW_FAILING_GOLDS = '--allow-failing-golds';

const real = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
};

/**
 * The likely reason the golds of `dataFile` fail in `plugin`'s env: the file is another env's
 * built-in task file, or lies in that env's folder of the datasets; else the general causes.
 */
export function likelyMismatch(plugin: EnvConstruction, plugins: readonly EnvConstruction[], dataFile: string | undefined): string {
  if (dataFile !== undefined) {
    const file = real(dataFile);
    for (const other of plugins) {
      if (other === plugin || !other.builtInTasks) continue;
      const builtIn = real(other.builtInTasks);
      const folder = builtIn.slice(0, builtIn.lastIndexOf(sep));
      if (file === builtIn || !relative(folder, file).startsWith('..')) {
        return `${dataFile} holds ${other.name} tasks, not ${plugin.name} tasks: \`intercode run ${other.name} --data ${dataFile}\` checks them`;
      }
    }
    return `the task file may be for another env than ${plugin.name}, or need the settings it was made with (its database, testbed or assets: see \`intercode run ${plugin.name} --help\`)`;
  }
  return `the built-in golds of ${plugin.name} should all score 1: the image or the engine may not be what they were verified on (\`intercode doctor\`)`;
}

/**
 * @throws GoldsFailingError when fewer than half of the scored golds solve their task (an
 *   episode not scored, its sandbox lost or its verifier silent, counts for neither side;
 *   none scored at all is no evidence of a mismatch either).
 */
export function checkGolds(plugin: EnvConstruction, plugins: readonly EnvConstruction[], dataFile: string | undefined, solved: number, scored: number): void {
  if (scored === 0 || solved >= GOLD_CHECK_SHARE * scored) return;
  throw new GoldsFailingError(
    `only ${solved} of ${scored} ${scored === 1 ? 'gold' : 'golds'} scored 1 (run checks golds: at least half should); likely cause: ${likelyMismatch(plugin, plugins, dataFile)}; ` +
      `${ALLOW_FAILING_GOLDS} measures without this check (exit 0)`,
    { solved, scored, data: dataFile ?? null, env: plugin.name },
  );
}
