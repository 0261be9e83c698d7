import type { EnvSlots } from './env-slots.js';
import type { EpisodeObserver, EpisodeOutcome } from './episode-session.js';
import { MetricsRegistry, type Counter, type Histogram } from './metrics.js';
import type { LeaseCounts } from './sessions.js';

/** Latency buckets in seconds: a warm reset is milliseconds, a cold one or a long command seconds. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/**
 * What `intercode serve` counts, in one {@link MetricsRegistry} (`GET /metrics`): sessions,
 * episodes by outcome, reset and step latency, the sandbox pool, and the counters other
 * parts of the server add to (`rolloutsStreamed`). Names are listed in docs/server.md.
 */
export class ServerMetrics implements EpisodeObserver {
  readonly registry = new MetricsRegistry();
  /** Rollout records streamed to clients (the rollouts endpoint increments it). */
  readonly rolloutsStreamed: Counter;
  private readonly episodesStarted: Counter;
  private readonly episodesFinished: Counter;
  private lostInEpisode = 0;
  private readonly resetSeconds: Histogram;
  private readonly stepSeconds: Histogram;

  /** `sessions` and `slots` are read at each scrape. */
  constructor(sessions: () => LeaseCounts, slots: EnvSlots) {
    const r = this.registry;
    r.gauge('intercode_sessions_active', 'Sessions open now (each holds one env).', () => sessions().active);
    r.gauge('intercode_sessions_max', 'The most sessions the server serves at once (--max-sessions).', () => sessions().max);
    r.counterFrom('intercode_sessions_opened_total', 'Sessions opened since the server started.', () => sessions().opened);
    r.counterFrom('intercode_sessions_refused_total', 'Sessions refused because every env was in use (CAPACITY_REACHED).', () => sessions().refused);
    r.counterFrom(
      'intercode_sessions_ended_total',
      'Sessions ended, by reason (close, drop, idle, shutdown).',
      () => Object.entries(sessions().ended).map(([reason, value]) => ({ labels: { reason }, value })),
      ['reason'],
    );
    this.episodesStarted = r.counter('intercode_episodes_started_total', 'Episodes started (resets answered).');
    this.episodesFinished = r.counter(
      'intercode_episodes_finished_total',
      'Episodes ended, by outcome: solved (reward 1), unsolved, truncated (turn limit, sandbox lost), abandoned (reset again or session ended mid-episode).',
      ['outcome'],
    );
    this.resetSeconds = r.histogram('intercode_reset_seconds', 'Time to answer a reset, in seconds.', LATENCY_BUCKETS, ['result']);
    this.stepSeconds = r.histogram('intercode_step_seconds', 'Time to answer a step, in seconds.', LATENCY_BUCKETS, ['result']);
    r.gauge(
      'intercode_pool_sandboxes',
      'Sandboxes of the warm pool by state: warm (ready), in_use, restoring (given back, being restored or removed), creating.',
      () => {
        const pool = slots.poolCounts();
        if (!pool) return [];
        return [
          { labels: { state: 'warm' }, value: pool.warm },
          { labels: { state: 'in_use' }, value: pool.inUse },
          { labels: { state: 'restoring' }, value: pool.restoring },
          { labels: { state: 'creating' }, value: pool.creating },
        ];
      },
      ['state'],
    );
    r.counterFrom('intercode_sandboxes_created_total', 'Sandboxes the warm pool created.', () => slots.poolCounts()?.created ?? 0);
    r.counterFrom(
      'intercode_sandboxes_lost_total',
      'Sandboxes lost: under an episode (it ended truncated, sandbox-lost), or found dead or dirty by the pool when about to hand them out (on_borrow).',
      () => [
        { labels: { when: 'in_episode' }, value: this.lostInEpisode },
        { labels: { when: 'on_borrow' }, value: slots.poolCounts()?.lostOnBorrow ?? 0 },
      ],
      ['when'],
    );
    this.rolloutsStreamed = r.counter('intercode_rollouts_streamed_total', 'Rollout records streamed to clients.');
    // Zero series exist from the start, so a rate() over them is defined before the first event.
    this.episodesStarted.inc({}, 0);
    for (const outcome of ['solved', 'unsolved', 'truncated', 'abandoned'] satisfies EpisodeOutcome[]) this.episodesFinished.inc({ outcome }, 0);
    this.rolloutsStreamed.inc({}, 0);
  }

  reset(seconds: number, failed: boolean): void {
    this.resetSeconds.observe(seconds, { result: failed ? 'error' : 'ok' });
  }

  step(seconds: number, failed: boolean): void {
    this.stepSeconds.observe(seconds, { result: failed ? 'error' : 'ok' });
  }

  started(): void {
    this.episodesStarted.inc();
  }

  finished(outcome: EpisodeOutcome, truncation?: string): void {
    this.episodesFinished.inc({ outcome });
    if (truncation === 'sandbox-lost') this.lostInEpisode += 1;
  }
}
