import { IntercodeError, SetupError } from '../errors.js';
import type { SetupPlan } from './plan.js';
import type { DockerdLayout, StepContext } from './step.js';
import { SYSTEM_DOCKERD } from './step.js';
import type { HostFacts } from './host-facts.js';

/** One step's record in the result. */
export interface StepRecord {
  id: string;
  status: 'done' | 'skipped' | 'failed' | 'not-run';
  seconds: number;
  detail: string;
}

/** What `intercode setup --json` prints. `ok` is false when commands are left for the user or a step failed. */
export interface SetupResult {
  ok: boolean;
  situation: SetupPlan['situation'];
  summary: string;
  endpoint: string;
  steps: StepRecord[];
  /** What to run, when setup could not do it itself. */
  commands: string[];
  elapsedSec: number;
}

/**
 * Runs a plan's steps in order, reporting each on `log` (`[2/4] start dockerd …`). Stops at
 * the first failure: the failing step's message and commands go into the result, never an
 * exception (except for bugs).
 */
export async function runSetup(facts: HostFacts, plan: SetupPlan, log: (line: string) => void, layout: DockerdLayout = SYSTEM_DOCKERD): Promise<SetupResult> {
  const began = Date.now();
  const result: SetupResult = { ok: true, situation: plan.situation, summary: plan.summary, endpoint: facts.endpoint, steps: [], commands: [], elapsedSec: 0 };
  log(plan.summary);
  if ('commands' in plan) {
    result.ok = false;
    result.commands = plan.commands;
  } else {
    const context: StepContext = { facts, layout, log: (line) => log(`    ${line}`) };
    if (plan.situation === 'install-and-start') result.endpoint = `unix://${layout.socket}`;
    for (const [index, step] of plan.steps.entries()) {
      const stepBegan = Date.now();
      log(`[${index + 1}/${plan.steps.length}] ${step.title}`);
      const seconds = () => Math.round((Date.now() - stepBegan) / 100) / 10;
      if (!result.ok) {
        result.steps.push({ id: step.id, status: 'not-run', seconds: 0, detail: 'an earlier step failed' });
        continue;
      }
      try {
        const outcome = await step.run(context);
        result.steps.push({ id: step.id, status: outcome.status, seconds: seconds(), detail: outcome.detail });
        log(`    ${outcome.status}: ${outcome.detail} (${seconds()} s)`);
      } catch (error) {
        if (!(error instanceof IntercodeError)) throw error;
        result.ok = false;
        result.steps.push({ id: step.id, status: 'failed', seconds: seconds(), detail: error.message });
        if (error instanceof SetupError) result.commands = [...(error.details.commands as string[])];
        log(`    failed: ${error.message}`);
      }
    }
  }
  result.elapsedSec = Math.round((Date.now() - began) / 100) / 10;
  return result;
}
