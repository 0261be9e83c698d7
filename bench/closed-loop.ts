import type { Task } from '../src/datasets/index.js';
import type { ResetOptions } from '../src/env/types.js';
import type { EnvStep, VecEnv } from '../src/vec/vec-env.js';

/**
 * Every env of `vec` in a closed loop through send/recv (EnvPool's asynchronous API): each
 * env starts with `first(envId)`; whenever a step comes back, `next` gets it with its
 * send-to-recv time and the time it was received, and its answer is that env's next action
 * — while `more()` holds. Returns when no step is left in flight.
 */
export async function closedLoop(
  vec: VecEnv,
  more: () => boolean,
  first: (envId: number) => string,
  next: (step: EnvStep, latencyMs: number, receivedAt: number) => string,
): Promise<void> {
  const sentAt = new Map<number, number>();
  const send = (envId: number, action: string) => {
    sentAt.set(envId, performance.now());
    vec.send([action], [envId]);
  };
  for (let id = 0; id < vec.numEnvs; id++) send(id, first(id));
  let inFlight = vec.numEnvs;
  while (inFlight > 0) {
    const steps = await vec.recv();
    const now = performance.now();
    for (const step of steps) {
      inFlight -= 1;
      const action = next(step, now - sentAt.get(step.envId)!, now);
      if (more()) {
        send(step.envId, action);
        inFlight += 1;
      }
    }
  }
}

/** The tasks in turn, cycling, as a VecEnv's `nextTask`; remembers which task each env got. */
export class TaskRotation {
  private given = 0;
  private readonly current = new Map<number, Task>();

  constructor(private readonly tasks: readonly Task[]) {}

  readonly nextTask = (envId: number): ResetOptions => {
    const task = this.tasks[this.given++ % this.tasks.length]!;
    this.current.set(envId, task);
    return { task };
  };

  /** The task env `envId` is playing. */
  of(envId: number): Task {
    return this.current.get(envId)!;
  }
}
