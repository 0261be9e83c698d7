import { EpisodeUnscorableError, SandboxError } from '../errors.js';
import type { CommandEvent } from '../sandbox/shell/types.js';
import type { Sandbox } from '../sandbox/types.js';
import type { StepInfo, StepResult } from './types.js';

/**
 * When an episode is cut off, and why: every rule by which an env ends an episode unscored
 * (its state cannot be trusted, or there is none left to score). A cut-off episode's reward
 * is 0 and `truncated` is set; it is never scored.
 */

export type Truncation = NonNullable<StepInfo['truncation']>;

/** How an episode ends cut off: the observation the step gives, why, and the step's own figures. */
export interface CutOff {
  observation: string;
  truncation: Truncation;
  info?: Partial<Pick<StepInfo, 'exitCode' | 'durationMs' | 'events'>>;
}

/** Something wrote into the scorer's shell: none of its answers, and so no score, can be trusted. */
export const SCORER_SHELL_BREACHED: Truncation = { reason: 'protocol-violation', message: "the scorer's shell received input that was not the harness's (a protocol violation)" };

/** The event of a step that makes its episode untrustworthy (a forged protocol line, a write past the disk limit), if any. */
export function untrustedEnd(events: readonly CommandEvent[]): Truncation | undefined {
  for (const event of events) {
    if (event.kind === 'protocol-violation') return { reason: 'protocol-violation', message: event.detail };
    if (event.kind === 'disk-limit') return { reason: 'disk-limit', message: `the sandbox wrote ${event.usedBytes} bytes, past its limit of ${event.limitBytes}` };
  }
  return undefined;
}

/** A `disk-limit` event when the sandbox's watched layer is over its limit now, else undefined. */
export async function diskLimitEvent(sandbox: Sandbox): Promise<CommandEvent | undefined> {
  const disk = sandbox.disk;
  const used = await disk?.exceededNow?.();
  return used === undefined ? undefined : { kind: 'disk-limit', usedBytes: used, limitBytes: disk!.limitBytes };
}

/** The episode ends over the disk limit: written past it since the last check (a process left running, say). */
export function overDiskEnd(event: CommandEvent, observation: string): CutOff {
  return { observation, truncation: untrustedEnd([event])!, info: { events: [event] } };
}

/**
 * Why a step that threw `error` ends its episode in `sandbox`, in this order: the scorer could
 * give no reward (a verifier that timed out); something wrote into the scorer's shell
 * (`scorerBreached`), whose answer then failed; the sandbox's processes were stopped for
 * writing past the disk limit; its state could not be read; else the sandbox was lost.
 * Undefined for an error that is no sandbox's nor scorer's (a bug: the caller throws it).
 */
export async function failedStepEnd(error: unknown, sandbox: Sandbox, scorerBreached: boolean, lastObservation: string): Promise<CutOff | undefined> {
  if (error instanceof EpisodeUnscorableError) return { observation: lastObservation, truncation: { reason: error.reason, message: error.message, details: { ...error.details } } };
  if (!(error instanceof SandboxError)) return undefined;
  if (scorerBreached) return { observation: lastObservation, truncation: SCORER_SHELL_BREACHED };
  const overDisk = await diskLimitEvent(sandbox).catch(() => undefined);
  if (overDisk) return overDiskEnd(overDisk, `[intercode: the sandbox's processes were stopped: ${untrustedEnd([overDisk])!.message}]`);
  if (error.code === 'STATE_UNREADABLE') return { observation: `[intercode: the sandbox's state could not be read: ${error.message}]`, truncation: { reason: 'state-unreadable', message: error.message } };
  return { observation: `[intercode: the sandbox was lost: ${error.message}]`, truncation: { reason: 'sandbox-lost', message: error.message } };
}

/** The step that ends an episode cut off. */
export function truncatedStep({ observation, truncation, info = {} }: CutOff): StepResult {
  return {
    observation,
    reward: 0,
    terminated: false,
    truncated: true,
    info: { actionExecuted: false, exitCode: null, durationMs: 0, events: [], ...info, truncation },
  };
}
