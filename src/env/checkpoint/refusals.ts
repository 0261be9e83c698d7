import { CheckpointError } from '../../errors.js';
import type { CarryRefusal } from '../../sandbox/carry-refusal.js';

/** The refusal of a checkpoint whose sandbox image is not the one this env scores (see SandboxEnv.checkRestorable). */
export function otherImage(image: string, expected: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_REFUSED', `the checkpoint's sandbox is of image ${image}, not ${expected}: this env cannot score it`, { details: { reason: 'other-image', image, expected } });
}

/** The refusal of a replay whose `step` (or the state after the last step) differs from the episode's. */
export function notReplayable(step: number, details: Record<string, unknown>): CheckpointError {
  const where = details.part === 'observation' ? `step ${step}'s observation` : `the state after ${step} steps (${String(details.part)})`;
  return new CheckpointError('CHECKPOINT_REFUSED', `the episode is not replayable: ${where} differs when its actions are replayed in a new sandbox (time, randomness or I/O)`, { details: { reason: 'not-replayable', step, ...details } });
}

/** A part of the state that could not be carried exactly, as the env's typed refusal (nothing partial handed out). */
export function refusedCheckpoint(refusal: CarryRefusal): CheckpointError {
  return new CheckpointError('CHECKPOINT_REFUSED', refusal.message, { details: { reason: refusal.reason, ...refusal.details }, cause: refusal });
}
