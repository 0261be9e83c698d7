/**
 * A fixed-capacity replay buffer of transitions (and, through them, whole episodes), with
 * uniform and proportional-prioritized sampling, optionally persisted as an append-only
 * {@link RecordLog}. When full, the oldest transition is evicted. A persisted buffer
 * reopens with the newest `capacity` transitions on disk; priorities are not persisted
 * (reopened transitions get the running maximum priority, as new ones do).
 */
import { ConfigError, TrajectoryError } from '../../src/errors.js';
import type { Random } from '../rng.js';
import { RecordLog, type RecordLogOptions } from './record-log.js';
import { MinTree, SumTree } from './sum-tree.js';
import { assembleEpisodes, type Episode, type Transition } from './types.js';

export interface ReplayBufferOptions {
  /** Most transitions held; the oldest is evicted past it. */
  capacity: number;
  /** Priority exponent α: 0 is uniform, 1 fully proportional (default 0.6). */
  alpha?: number;
}

/** A prioritized draw: slots, their transitions and importance-sampling weights (max-normalised). */
export interface PrioritizedSample {
  slots: number[];
  transitions: Transition[];
  weights: number[];
}

/** Record layout on disk: a tuple, so keys are not repeated in every record. */
type TransitionTuple = [string, number, string, string, string, string, string, string, number, string, boolean, boolean, Record<string, unknown>];

const toTuple = (t: Transition): TransitionTuple => [t.episode, t.step, t.env, t.taskId, t.query, t.observation, t.previousAction, t.action, t.reward, t.nextObservation, t.terminated, t.truncated, t.info];

function fromTuple(value: unknown, file: string, record: number): Transition {
  if (!Array.isArray(value) || value.length !== 13) throw new TrajectoryError({ file, record }, 'not a transition record (expected a 13-field tuple)');
  const [episode, step, env, taskId, query, observation, previousAction, action, reward, nextObservation, terminated, truncated, info] = value as TransitionTuple;
  return { episode, step, env, taskId, query, observation, previousAction, action, reward, nextObservation, terminated, truncated, info };
}

/**
 * Every intact transition persisted in `dir`, oldest first, without bounding them by a capacity.
 * @throws TrajectoryError as {@link ReplayBuffer.open}.
 */
export function readTransitions(dir: string): Transition[] {
  const opened = RecordLog.open(dir);
  opened.log.close();
  const out: Transition[] = [];
  let record = 0;
  for (const segment of opened.log.segments) {
    for (let i = 0; i < segment.records; i++) out.push(fromTuple(opened.records[record++], segment.path, i + 1));
  }
  return out;
}

export class ReplayBuffer {
  readonly capacity: number;
  private readonly alpha: number;
  private readonly slots: (Transition | undefined)[];
  private readonly priorities: SumTree;
  private readonly minWeight: MinTree;
  private next = 0;
  private count = 0;
  private maxPriority = 1;
  private log: RecordLog | undefined;

  constructor(options: ReplayBufferOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) throw new ConfigError('capacity', `must be a positive integer, got ${options.capacity}`);
    const alpha = options.alpha ?? 0.6;
    if (!(alpha >= 0)) throw new ConfigError('alpha', `must be ≥ 0, got ${alpha}`);
    this.capacity = options.capacity;
    this.alpha = alpha;
    this.slots = new Array(options.capacity);
    this.priorities = new SumTree(options.capacity);
    this.minWeight = new MinTree(options.capacity);
  }

  /**
   * Opens the buffer persisted in `dir` (created if missing): loads the newest `capacity`
   * transitions, dropping a torn last record. Later additions are appended there.
   * @throws TrajectoryError naming a corrupt segment and offset, or a record that is not a transition.
   */
  static open(dir: string, options: ReplayBufferOptions & RecordLogOptions): { buffer: ReplayBuffer; droppedTailBytes: number } {
    const opened = RecordLog.open(dir, options);
    const buffer = new ReplayBuffer(options);
    let record = 0;
    for (const segment of opened.log.segments) {
      for (let i = 0; i < segment.records; i++) buffer.insert(fromTuple(opened.records[record++], segment.path, i + 1));
    }
    buffer.log = opened.log;
    return { buffer, droppedTailBytes: opened.droppedTailBytes };
  }

  get size(): number {
    return this.count;
  }

  /** Bytes on disk (0 when not persisted). */
  get diskBytes(): number {
    return this.log?.bytes ?? 0;
  }

  /** Adds one transition (persisting it first, when persisted). */
  add(transition: Transition): void {
    this.log?.append(toTuple(transition));
    this.insert(transition);
    this.compactLog();
  }

  /** Adds a batch (one write when persisted). */
  addMany(transitions: readonly Transition[]): void {
    this.log?.appendMany(transitions.map(toTuple));
    for (const t of transitions) this.insert(t);
    this.compactLog();
  }

  /** Adds every transition of an episode. */
  addEpisode(episode: Episode): void {
    this.addMany(episode.transitions);
  }

  private insert(transition: Transition): void {
    this.slots[this.next] = transition;
    this.setPriority(this.next, this.maxPriority);
    this.next = (this.next + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
  }

  private setPriority(slot: number, priority: number): void {
    const weight = priority ** this.alpha;
    this.priorities.set(slot, weight);
    this.minWeight.set(slot, weight);
  }

  private compactLog(): void {
    this.log?.dropSegmentsBeyond(this.capacity);
  }

  /** Transitions oldest first. */
  *transitions(): IterableIterator<Transition> {
    const start = this.count < this.capacity ? 0 : this.next;
    for (let i = 0; i < this.count; i++) yield this.slots[(start + i) % this.capacity]!;
  }

  /** The complete episodes still wholly in the buffer, oldest first. */
  episodes(): Episode[] {
    return assembleEpisodes(this.transitions());
  }

  /** `n` transitions drawn uniformly with replacement. */
  sample(n: number, random: Random): Transition[] {
    this.requireData();
    const start = this.count < this.capacity ? 0 : this.next;
    return Array.from({ length: n }, () => this.slots[(start + Math.floor(random() * this.count)) % this.capacity]!);
  }

  /**
   * `n` transitions drawn with probability ∝ priority^α, with importance-sampling weights
   * (N·P(i))^−β divided by their maximum over the buffer.
   */
  samplePrioritized(n: number, random: Random, beta = 0.4): PrioritizedSample {
    this.requireData();
    const total = this.priorities.total;
    const slots = Array.from({ length: n }, () => this.priorities.find(random() * total));
    const weightOf = (w: number) => (w / this.minWeight.min) ** -beta;
    return { slots, transitions: slots.map((s) => this.slots[s]!), weights: slots.map((s) => weightOf(this.priorities.get(s))) };
  }

  /** Sets the priorities of sampled slots (e.g. to |TD error| or the loss of each). */
  updatePriorities(slots: readonly number[], priorities: readonly number[]): void {
    slots.forEach((slot, i) => {
      const priority = Math.max(priorities[i]!, 1e-6);
      this.maxPriority = Math.max(this.maxPriority, priority);
      this.setPriority(slot, priority);
    });
  }

  private requireData(): void {
    if (this.count === 0) throw new ConfigError('replay buffer', 'is empty: nothing to sample');
  }

  close(): void {
    this.log?.close();
    this.log = undefined;
  }
}
