import type { EpisodeState, SandboxEnvConfig } from '../../src/env/sandbox-env-types.js';
import { SandboxEnv } from '../../src/env/sandbox-env.js';
import { CheckpointError, SandboxError } from '../../src/errors.js';
import type { Score } from '../../src/env/types.js';
import { IntercodeExecRunner } from '../../src/sandbox/shell/intercode-exec-runner.js';
import { ShellSession, type ShellSessionOptions } from '../../src/sandbox/shell/shell-session.js';
import { renderObservation, type CommandRunner } from '../../src/sandbox/shell/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { goldText, type Task } from '../../src/datasets/index.js';
import { FileProbe, GIT_INDEX, isScorerInstrument, type HashMode } from './file-probe.js';
import { GoldCache, type GoldRun } from './gold-cache.js';
import type { GoldKey } from '../../src/golds/gold-store.js';
import { BASH_REWARD, isAddition, sharedAdditions, type BashOutcome, type FileChange } from './reward.js';
import { INLINE, type CpuWorkers } from '../../src/workers/cpu-workers.js';
import { FreshWorkspaces } from '../../src/pool/fresh-workspaces.js';
import { KeptWorkspace } from '../../src/pool/kept-workspace.js';
import type { Workspace } from '../../src/pool/types.js';
import { intercodeFreshTestbed, intercodeReset, type ResetMode } from './intercode-reset.js';
import { comparedGoldOutput, type ComparedGoldOutput } from './compared-gold-output.js';
import type { TestbedTree } from './images.js';

/**
 * How actions run. `session`: a persistent bash per episode (cwd, variables, functions
 * persist; quotes intact). `intercode`: InterCode's one exec per action, for reproducing
 * its recorded logs.
 */
export type ExecMode = 'session' | 'intercode';

export interface BashEnvConfig extends SandboxEnvConfig {
  execMode: ExecMode;
  hashMode: HashMode;
  /**
   * Run each task's gold once (twice, to check it is deterministic) and reuse its outcome.
   * Pass one {@link GoldCache} to several envs to share it.
   */
  goldCache: boolean | GoldCache;
  shell?: Partial<ShellSessionOptions>;
  /** The shell the `intercode` mode wraps actions in (InterCode: /bin/bash; /bin/sh for its fs-0 image). */
  intercodeShell?: string;
  /** Where rewards are computed (default: on the calling thread). */
  workers?: CpuWorkers;
  /** How episodes and gold runs start (default `exact`; see {@link ResetMode}). */
  reset?: ResetMode;
  /** `intercode` reset mode: the testbed tree to date as freshly written in each new sandbox (none: nothing to date). */
  testbedTree?: TestbedTree;
  /** Which part of the gold output the answer term compares (default `full`; see {@link ComparedGoldOutput}). */
  comparedGoldOutput?: ComparedGoldOutput;
  /** The image's id (the engine's `sha256:…`), part of a gold's on-disk key next to its tag. */
  imageId?: string;
}

/** NL2Bash tasks over a testbed; the reward reproduces InterCode's bash reward. */
export class BashEnv extends SandboxEnv {
  readonly id = 'intercode/bash-v1';
  /** Not in `intercode` reset mode: there each env keeps its own sandboxes, whose history matters. */
  override readonly sharesWorkspaces: boolean;
  readonly logName = 'ic_bash';
  private readonly goldCache: GoldCache | undefined;
  /** `intercode` reset mode: the env's long-lived gold sandbox (InterCode's evaluation container). */
  private readonly goldWorkspace: KeptWorkspace | undefined;
  /** Where golds run otherwise: a new sandbox each time (made on the first gold run). */
  private newGoldSandboxes: FreshWorkspaces | undefined;
  private workers: CpuWorkers;
  /** What git lists in an untouched sandbox, read once from a workspace's reference sandbox. */
  private untouched: { reference: Sandbox; changes: Promise<FileChange[]> } | undefined;

  constructor(protected override readonly config: BashEnvConfig) {
    super(config);
    this.workers = config.workers ?? INLINE;
    const keep = config.reset === 'intercode';
    this.sharesWorkspaces = !keep;
    // A gold run's outcome then depends on what earlier ones left in the gold sandbox: never cached.
    this.goldCache = keep || config.goldCache === false ? undefined : config.goldCache === true ? new GoldCache() : config.goldCache;
    if (keep) {
      const prepare = config.testbedTree ? intercodeFreshTestbed(config.testbedTree) : undefined;
      this.useWorkspaces(new KeptWorkspace(this.workspaceFactory(), intercodeReset, prepare), { own: true });
      this.goldWorkspace = new KeptWorkspace(this.workspaceFactory(), intercodeReset, prepare);
    }
  }

  override async close(): Promise<void> {
    await super.close();
    await this.goldWorkspace?.close();
    await this.newGoldSandboxes?.close();
  }

  /** A new env of this configuration sharing this one's gold cache and reward workers (see SandboxEnv.fork); not in `intercode` reset mode, whose envs keep sandboxes of their own. */
  protected override sibling(): BashEnv {
    if (this.config.reset === 'intercode') throw new CheckpointError('CHECKPOINT_UNSUPPORTED', "bash envs in `intercode` reset mode keep sandboxes of their own: they are not forked");
    return new BashEnv({ ...this.config, goldCache: this.goldCache ?? false, workers: this.workers });
  }

  /** Computes rewards on `workers` from the next score on (the caller closes them). */
  useCpuWorkers(workers: CpuWorkers): void {
    this.workers = workers;
  }

  protected async openRunner(sandbox: Sandbox): Promise<CommandRunner> {
    if (this.config.execMode === 'intercode') {
      return new IntercodeExecRunner(sandbox, {
        shellPath: this.config.intercodeShell ?? '/bin/bash',
        timeoutMs: this.config.shell?.timeoutMs ?? 10_000,
      });
    }
    return ShellSession.open(sandbox, this.config.shell);
  }

  protected override async resumeRunner(sandbox: Sandbox): Promise<ShellSession | undefined> {
    return this.config.execMode === 'session' ? ShellSession.resume(sandbox, 'agent', this.config.shell) : undefined;
  }

  protected async score(episode: EpisodeState): Promise<Score> {
    const { outcome, cached } = await this.goldOutcome(episode.task);
    const gold = { ...outcome, observation: comparedGoldOutput(outcome.observation, episode.lastObservation, this.config.comparedGoldOutput ?? 'full') };
    const probe = FileProbe.of(episode.control, episode.sandbox);
    // Read with every process the agent left stopped: none can change what the probe reads or prints.
    const agent: BashOutcome = await probe.whileAlone(async () => {
      const changes = await this.episodeChanges(episode, probe);
      const shared = sharedAdditions(changes, gold.changes).map(([path]) => path);
      return { observation: episode.lastObservation, changes, hashes: await probe.hashes(shared, this.config.hashMode) };
    });
    const result = await this.workers.run(BASH_REWARD, { agent, gold });
    return {
      reward: result.reward,
      parts: result.parts,
      details: { ...result.info, agent_obs: agent.observation, eval_obs: gold.observation, gold_cached: cached },
    };
  }

  /**
   * What the episode changed, as `git status` lists it. When the workspace has a reference
   * (an untouched sandbox of the image, see Workspace.reference) and nothing differs from it,
   * git would list what it lists in the reference, read there once: no git process for such
   * an episode (most queries only read). When the comparison or that read fails, git runs
   * in the episode's sandbox. Where what the episode changed can be read from outside the
   * sandbox (compared with the reference on the host, or a new sandbox's writable layer read
   * there), an episode that changed what the probe relies on (see isScorerInstrument) is not scored.
   * @throws SandboxError STATE_UNREADABLE for such an episode, or a listing not come back whole.
   */
  private async episodeChanges(episode: EpisodeState, probe: FileProbe): Promise<FileChange[]> {
    const { sandbox, reference } = episode;
    const seen = reference || episode.fromImage ? await sandbox.fromHost?.changes(reference).catch(() => undefined) : undefined;
    const instrument = seen?.find((change) => isScorerInstrument(change.path));
    if (instrument) {
      throw new SandboxError('STATE_UNREADABLE', `the episode changed what the scorer runs or reads (${instrument.path}: ${instrument.kind})`, { details: { change: instrument } });
    }
    if (seen?.some((change) => change.path === GIT_INDEX)) await probe.requirePlainIndex();
    const unchanged = seen ? seen.length === 0 : reference !== undefined && (await sandbox.changes(reference).then((changes) => changes.length === 0, () => false));
    if (reference && unchanged) {
      if (this.untouched?.reference !== reference) this.untouched = { reference, changes: FileProbe.changesIn(reference) };
      const untouched = this.untouched;
      const changes = await untouched.changes.catch(() => {
        if (this.untouched === untouched) this.untouched = undefined;
        return undefined;
      });
      if (changes) return changes;
    }
    return probe.changes();
  }

  /** What `task`'s gold command does in a new sandbox of the image (changes, sums, output), from the gold cache when it has it. */
  goldOutcome(task: Task): Promise<{ outcome: BashOutcome; cached: boolean }> {
    const gold = goldText(task);
    const run = () => this.runGold(gold);
    if (!this.goldCache) return run().then(({ outcome }) => ({ outcome, cached: false }));
    return this.goldCache.get(this.goldCacheKey(task), run, this.goldKey(task));
  }

  /** The gold cache's in-process key of `task`'s gold. */
  private goldCacheKey(task: Task): string {
    return `${this.config.spec.image}\0${this.config.execMode}\0${this.config.hashMode}\0${goldText(task)}`;
  }

  /** How long `task`'s gold took when it was verified (see GoldCache.durationMs); undefined without a gold cache. */
  async goldDurationMs(task: Task): Promise<number | undefined> {
    return this.goldCache?.durationMs(this.goldCacheKey(task), this.goldKey(task));
  }

  /**
   * Everything a gold's outcome depends on, the on-disk key of its verified outcome: the
   * image (tag: a hash of every build input, the testbed included; and id), how commands run
   * (exec mode, its shell, the time limit and output caps, the sandbox's limits, what the
   * runtime shows of /proc and /sys: SandboxRuntime.systemView), how changed
   * files are compared (hash mode), and the task record. The compared part of the gold output
   * (`--eval-obs`) is applied to the stored outcome afterwards, so it is no part of the key.
   */
  goldKey(task: Task): GoldKey {
    const { spec, execMode, hashMode, shell, intercodeShell, imageId, runtime } = this.config;
    return {
      env: this.id,
      image: spec.image,
      imageId: imageId ?? null,
      limits: { ...spec.limits },
      system: runtime.systemView ?? runtime.name,
      execMode,
      intercodeShell: execMode === 'intercode' ? (intercodeShell ?? '/bin/bash') : null,
      shell: { ...shell },
      hashMode,
      task: { query: task.query, gold: task.gold, metadata: task.metadata },
    };
  }

  /**
   * Runs the gold command in a new sandbox of the image, removed afterwards (never one of a
   * pool, restored after an earlier episode: the gold's answer is the new sandbox's), or in
   * `intercode` reset mode in the env's gold sandbox, reset first.
   */
  private async runGold(gold: string): Promise<GoldRun> {
    const source = this.goldWorkspace ?? (this.newGoldSandboxes ??= new FreshWorkspaces(this.workspaceFactory()));
    const workspace = await source.acquire();
    try {
      return await this.goldOutcomeIn(workspace, gold);
    } finally {
      source.release(workspace);
    }
  }

  /** Runs `gold` through the workspace's runner, then reads what it changed through its control shell. */
  private async goldOutcomeIn(workspace: Workspace, gold: string): Promise<GoldRun> {
    const ranIn = workspace.fromImage === true ? ('new-sandboxes' as const) : undefined;
    const result = await workspace.runner.run(gold);
    const probe = FileProbe.of(workspace.control, workspace.sandbox);
    // Read as an episode's state is (see score): what the gold left running waits meanwhile.
    const outcome = await probe.whileAlone(async () => {
      const changes = await probe.changes();
      const added = changes.filter(isAddition).map(([path]) => path);
      return { observation: renderObservation(result), changes, hashes: await probe.hashes(added, this.config.hashMode) };
    });
    return { outcome, durationMs: result.durationMs, ...(ranIn ? { ranIn } : {}) };
  }
}
