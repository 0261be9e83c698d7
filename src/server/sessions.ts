import { randomUUID } from 'node:crypto';
import type { EnvSlots } from './env-slots.js';
import { EpisodeSession, type EpisodeObserver } from './episode-session.js';
import { WireError, type ForkReply } from './protocol.js';

/** Why a session ended: the client said so, its connection went away, it sat idle, or the server is stopping. */
export type EndReason = 'close' | 'drop' | 'idle' | 'shutdown';

/**
 * A session's lease on one env (and so one sandbox): who holds it, until when it may sit
 * idle, and how it ended. Leases are made and ended only by {@link SessionLeases}.
 */
export interface Lease {
  readonly id: string;
  /** Who holds it, for logs: the transport and the peer (`ws 127.0.0.1:53122`, `mcp 1f0c…`). */
  readonly owner: string;
  readonly session: EpisodeSession;
  /** performance.now() after which an idle lease is ended; moved on by every request. */
  readonly deadline: number;
  /** Set once the lease is ending or ended. */
  readonly ended: EndReason | undefined;
}

interface LeaseRecord extends Lease {
  deadline: number;
  ended: EndReason | undefined;
  readonly env: ReturnType<EnvSlots['take']> & object;
  onEnd: (reason: EndReason) => void;
  /** A transport holds it (false for a fork's session until a client {@link SessionLeases.attach}es to it). */
  attached: boolean;
  /** The requests of this session run one after another: the tail of that chain. */
  tail: Promise<unknown>;
  queued: number;
  ending?: Promise<void>;
}

export interface SessionLeasesOptions {
  /** A lease with no request for this long is ended and its sandbox returned. */
  idleTimeoutMs: number;
  /** The most bytes of JSON one reply may take (its output is cut to fit). */
  maxReplyBytes: number;
  /** Told of every session's episodes (the server's metrics). */
  observer?: EpisodeObserver;
}

/** Requests one session may have in flight, the running one included (beyond: SESSION_ERROR). */
const MAX_IN_FLIGHT = 8;

export interface LeaseCounts {
  active: number;
  max: number;
  opened: number;
  /** Sessions refused because every env was lent (CAPACITY_REACHED). */
  refused: number;
  ended: Record<EndReason, number>;
}

/**
 * The sessions of a server as leases on its {@link EnvSlots}. {@link end} is the one place a
 * lease ends — on close, drop, idle and shutdown alike: it tells the transport (which closes
 * its connection), waits for the request in flight, and gives the env back, which returns
 * the sandbox to the pool at once. A session's requests run in order, one at a time.
 */
export class SessionLeases {
  private readonly leases = new Map<string, LeaseRecord>();
  private readonly reaper: NodeJS.Timeout;
  private stopping = false;
  private readonly counts: Pick<LeaseCounts, 'opened' | 'refused' | 'ended'>;

  constructor(
    private readonly slots: EnvSlots,
    private readonly options: SessionLeasesOptions,
  ) {
    this.counts = { opened: 0, refused: 0, ended: { close: 0, drop: 0, idle: 0, shutdown: 0 } };
    const every = Math.max(10, Math.min(1_000, options.idleTimeoutMs / 4));
    this.reaper = setInterval(() => this.reapIdle(), every);
    this.reaper.unref();
  }

  /**
   * A new lease for `owner`; `onEnd` is called once when it ends (for any reason).
   * @throws WireError CAPACITY_REACHED (with active_sessions, max_sessions) when every env is lent; SESSION_ERROR while shutting down.
   */
  open(owner: string, onEnd: (reason: EndReason) => void): Lease {
    if (this.stopping) throw new WireError('SESSION_ERROR', 'the server is shutting down');
    const env = this.slots.take();
    if (!env) {
      this.counts.refused += 1;
      throw new WireError('CAPACITY_REACHED', `all ${this.slots.capacity} sessions are in use`, {
        active_sessions: this.leases.size,
        max_sessions: this.slots.capacity,
      });
    }
    return this.lease(env, owner, onEnd, true);
  }

  private lease(env: LeaseRecord['env'], owner: string, onEnd: (reason: EndReason) => void, attached: boolean): LeaseRecord {
    const lease: LeaseRecord = {
      id: randomUUID(),
      owner,
      session: new EpisodeSession(env, this.slots.envName, this.options.maxReplyBytes, this.options.observer),
      deadline: performance.now() + this.options.idleTimeoutMs,
      ended: undefined,
      env,
      onEnd,
      attached,
      tail: Promise.resolve(),
      queued: 0,
    };
    this.leases.set(lease.id, lease);
    this.counts.opened += 1;
    return lease;
  }

  /**
   * Continues `lease`'s episode in `n` new sessions (each an env of the slots and a sandbox of
   * its own, counted in the capacity), after the lease's requests before it; its own episode
   * goes on unchanged. The new sessions wait, unattached, for a client to {@link attach} (the
   * idle timeout ends those nobody takes). All or none: sessions made for a fork that failed,
   * or whose asking session ended before the reply, are ended.
   * @throws WireError CAPACITY_REACHED (with `requested`, `free`, `active_sessions`,
   *   `max_sessions`) when fewer than `n` envs are free — nothing is queued; SESSION_ERROR;
   *   the session's checkpoint errors (CHECKPOINT_UNSUPPORTED, CHECKPOINT_REFUSED).
   */
  fork(lease: Lease, n: number): Promise<ForkReply> {
    return this.run(lease, async (session) => {
      if (this.stopping) throw new WireError('SESSION_ERROR', 'the server is shutting down');
      const free = this.slots.capacity - this.slots.inUse;
      const envs = free >= n ? Array.from({ length: n }, () => this.slots.take()) : [];
      if (envs.length < n || envs.some((env) => env === undefined)) {
        await Promise.all(envs.flatMap((env) => (env ? [this.slots.give(env)] : [])));
        throw new WireError('CAPACITY_REACHED', `a fork into ${n} sessions needs ${n} free; ${free} of ${this.slots.capacity} are free`, {
          requested: n,
          free,
          active_sessions: this.leases.size,
          max_sessions: this.slots.capacity,
        });
      }
      const children = envs.map((env) => this.lease(env!, `fork of ${lease.owner}`, () => undefined, false));
      try {
        const stepCount = await session.forkInto(children.map((child) => child.session));
        // The asking session ended meanwhile (dropped, idle, shutdown): no one can learn the forks' ids.
        if (lease.ended) throw new WireError('SESSION_ERROR', `the session ended (${lease.ended}) while it forked; its forks were ended`);
        return { sessions: children.map((child) => ({ session_id: child.id, episode_id: child.session.state().episode_id! })), step_count: stepCount };
      } catch (error) {
        await Promise.all(children.map((child) => this.end(child, 'close')));
        throw error;
      }
    });
  }

  /**
   * A transport takes over a fork's session `id` (once): `onEnd` is called when it ends.
   * @throws WireError SESSION_ERROR when no such session waits (unknown, ended, or already taken).
   */
  attach(id: string, onEnd: (reason: EndReason) => void): Lease {
    const record = this.leases.get(id);
    if (!record || record.ended || record.attached) throw new WireError('SESSION_ERROR', `no forked session ${JSON.stringify(id.slice(0, 64))} waits to be taken (unknown, ended, or taken already)`);
    record.attached = true;
    record.onEnd = onEnd;
    record.deadline = performance.now() + this.options.idleTimeoutMs;
    return record;
  }

  /**
   * Runs `request` on the lease's session after the ones before it.
   * @throws WireError SESSION_ERROR when the lease has ended or too many requests wait; whatever `request` throws.
   */
  run<T>(lease: Lease, request: (session: EpisodeSession) => Promise<T>): Promise<T> {
    const record = this.leases.get(lease.id);
    if (!record || record.ended) return Promise.reject(new WireError('SESSION_ERROR', `the session has ended (${lease.ended ?? 'close'})`));
    if (record.queued >= MAX_IN_FLIGHT) {
      return Promise.reject(new WireError('SESSION_ERROR', `${record.queued} requests of this session are already waiting; wait for their replies`));
    }
    record.queued += 1;
    const result = record.tail.then(async () => {
      if (record.ended) throw new WireError('SESSION_ERROR', `the session has ended (${record.ended})`);
      try {
        return await request(record.session);
      } finally {
        record.deadline = performance.now() + this.options.idleTimeoutMs;
      }
    });
    record.tail = result.then(
      () => (record.queued -= 1),
      () => (record.queued -= 1),
    );
    return result;
  }

  /**
   * Ends the lease (once; later calls get the same promise): the transport's `onEnd` runs,
   * the request in flight finishes, and the env goes back to the slots with its sandbox.
   */
  end(lease: Lease, reason: EndReason): Promise<void> {
    const record = this.leases.get(lease.id);
    if (!record) return Promise.resolve();
    if (record.ending) return record.ending;
    record.ended = reason;
    this.counts.ended[reason] += 1;
    // Set before onEnd runs: a transport that closes there calls end() again, which must
    // find the lease ending (else its env would be given back twice, one env to two sessions).
    record.ending = record.tail
      .then(() => {
        record.session.end();
        return this.slots.give(record.env);
      })
      .finally(() => this.leases.delete(record.id));
    try {
      record.onEnd(reason);
    } catch {
      // The transport's socket may already be gone; the lease ends all the same.
    }
    return record.ending;
  }

  /** Sessions open now (those still ending included: their sandboxes are not back yet). */
  get active(): number {
    return this.leases.size;
  }

  stats(): LeaseCounts {
    return { active: this.leases.size, max: this.slots.capacity, opened: this.counts.opened, refused: this.counts.refused, ended: { ...this.counts.ended } };
  }

  /** Refuses new leases, ends every one (`shutdown`) and waits until their envs are back. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reaper);
    await Promise.all([...this.leases.values()].map((lease) => this.end(lease, 'shutdown')));
  }

  private reapIdle(): void {
    const now = performance.now();
    for (const lease of this.leases.values()) {
      if (!lease.ended && lease.queued === 0 && now > lease.deadline) void this.end(lease, 'idle');
    }
  }
}
