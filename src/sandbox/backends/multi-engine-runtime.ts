import type Docker from 'dockerode';
import { EngineUnreachableError, ImageError, SandboxError } from '../../errors.js';
import type { BuildLog } from '../../images/image-builder.js';
import type { ImageRecipe } from '../../images/recipe.js';
import { DockerRuntime } from '../docker/docker-runtime.js';
import { dockerSystemView } from '../docker/container-creation.js';
import { connectEngine } from '../docker/engine.js';
import { thisRunFilter } from '../docker/labels.js';
import type { Sandbox, SandboxRuntime, SandboxSettings, SandboxSpec } from '../types.js';
import type { EngineStatus, EngineTarget, MultiEngineOptions } from './backend.js';
import { EngineSandbox, type HoldingEngine } from './engine-sandbox.js';
import { ensureImageOnEngines } from './image-provisioning.js';
import { pickEngine } from './placement.js';

class Engine implements HoldingEngine {
  /** Set while the engine answers (an engine down from the start has none yet). */
  client: { docker: Docker; runtime: DockerRuntime } | undefined;
  up = false;
  generation = 0;
  readonly live = new Set<EngineSandbox>();
  pending = 0;
  created = 0;
  downs = 0;
  failures = 0;
  checking: Promise<boolean> | undefined;

  constructor(
    readonly endpoint: string,
    readonly weight: number,
    private readonly owner: MultiEngineRuntime,
  ) {}

  connected(docker: Docker): void {
    this.client = { docker, runtime: new DockerRuntime(docker, this.owner.sandboxSettings) };
    this.up = true;
  }

  get docker(): Docker {
    return this.client!.docker;
  }

  get load(): number {
    return this.live.size + this.pending;
  }

  check(): Promise<boolean> {
    return this.owner.checkEngine(this, 1);
  }

  release(sandbox: Sandbox): void {
    this.live.delete(sandbox as EngineSandbox);
  }
}

/**
 * Sandboxes spread over several Docker engines. Each create goes to the engine with the
 * lowest load relative to its weight (see {@link pickEngine}). An engine that stops
 * answering — a create fails and a ping confirms it, or periodic pings fail — is marked
 * down: it gets no new sandboxes, and the sandboxes it held throw SANDBOX_LOST from then
 * on. Down engines keep being pinged; when one answers again, this run's old containers on
 * it are removed, the images this runtime was asked for are put back if missing, and it
 * takes sandboxes again.
 */
export class MultiEngineRuntime implements SandboxRuntime {
  readonly name = 'docker-multi';
  /** Every engine's sandboxes run under the same OCI runtime (see MultiEngineOptions.sandboxes). */
  get systemView(): string {
    return dockerSystemView(this.ociRuntime);
  }

  get ociRuntime(): string | undefined {
    return this.options.sandboxes.ociRuntime;
  }

  /** What each engine's DockerRuntime makes its sandboxes with. */
  get sandboxSettings(): SandboxSettings {
    return this.options.sandboxes;
  }
  private readonly engines: Engine[];
  private readonly options: MultiEngineOptions;
  /** The tag create() is given for each image asked for → its recipe (envs asking for the same image share one entry). */
  private readonly recipes = new Map<string, ImageRecipe>();
  /** That tag → the tag on engines whose base image differs (so the hash differs). */
  private readonly aliases = new Map<string, Map<string, string>>();
  private readonly timer: NodeJS.Timeout;

  private constructor(targets: readonly EngineTarget[], clients: (Docker | undefined)[], options: Partial<MultiEngineOptions>) {
    this.options = { healthIntervalMs: 2_000, pingTimeoutMs: 3_000, failuresBeforeDown: 2, log: () => undefined, sandboxes: {}, ...options };
    this.engines = targets.map((t, i) => {
      const engine = new Engine(t.endpoint, t.weight, this);
      const client = clients[i];
      if (client) engine.connected(client);
      return engine;
    });
    this.timer = setInterval(() => void this.healthRound(), this.options.healthIntervalMs);
    this.timer.unref();
  }

  /**
   * Connects to every engine. Engines that do not answer start down and are probed like any other.
   * @throws EngineUnreachableError when none answers.
   */
  static async connect(targets: readonly EngineTarget[], options: Partial<MultiEngineOptions> = {}): Promise<MultiEngineRuntime> {
    const timeoutMs = options.pingTimeoutMs ?? 3_000;
    const clients = await Promise.all(targets.map((t) => connectEngine(t.endpoint, timeoutMs).catch(() => undefined)));
    if (!clients.some(Boolean)) throw new EngineUnreachableError(targets.map((t) => t.endpoint).join(', '));
    return new MultiEngineRuntime(targets, clients, options);
  }

  /**
   * Creates a sandbox on the engine with the most room; if that engine turns out to be
   * down, on the next.
   * @throws SandboxError SANDBOX_UNAVAILABLE when no engine can take it; ImageError when the image is missing on the chosen engine.
   */
  async create(spec: SandboxSpec): Promise<Sandbox> {
    const tried = new Set<Engine>();
    let lastError: unknown;
    for (;;) {
      const engine = pickEngine(this.engines.filter((e) => e.up && !tried.has(e)));
      if (!engine) {
        throw new SandboxError('SANDBOX_UNAVAILABLE', `No Docker engine could take a sandbox (${this.engines.map((e) => `${e.endpoint} ${e.up ? 'failed' : 'down'}`).join(', ')})`, {
          details: { image: spec.image, endpoints: this.engines.map((e) => e.endpoint) },
          cause: lastError,
        });
      }
      tried.add(engine);
      const generation = engine.generation;
      engine.pending += 1;
      try {
        const image = this.aliases.get(spec.image)?.get(engine.endpoint) ?? spec.image;
        const inner = await engine.client!.runtime.create({ ...spec, image });
        const sandbox = new EngineSandbox(inner, spec, engine);
        if (engine.generation !== generation) {
          sandbox.abandon();
          continue;
        }
        engine.live.add(sandbox);
        engine.created += 1;
        return sandbox;
      } catch (error) {
        if (error instanceof ImageError) {
          throw new ImageError(error.code as 'IMAGE_BUILD_FAILED' | 'IMAGE_MISSING', `${error.message} (engine ${engine.endpoint})`, { details: { ...error.details, endpoint: engine.endpoint }, cause: error });
        }
        if (!(error instanceof SandboxError) || (await this.checkEngine(engine, 1))) throw error;
        lastError = error;
      } finally {
        engine.pending -= 1;
      }
    }
  }

  /**
   * Builds or copies `recipe`'s image onto every engine that is up (see
   * {@link ensureImageOnEngines}), and onto any engine that comes back later.
   * @returns the tag to put in a SandboxSpec.
   */
  async ensureImage(recipe: ImageRecipe, log: BuildLog): Promise<string> {
    const up = this.engines.filter((e) => e.up);
    if (up.length === 0) throw new EngineUnreachableError(this.engines.map((e) => e.endpoint).join(', '));
    const tags = await ensureImageOnEngines(up, recipe, log);
    const tag = tags.get(up[0]!.endpoint)!;
    this.recipes.set(tag, recipe);
    this.recordAliases(tag, tags);
    return tag;
  }

  /** Each engine's state, in the order given. */
  status(): EngineStatus[] {
    return this.engines.map((e) => ({ endpoint: e.endpoint, weight: e.weight, up: e.up, live: e.live.size, created: e.created, downs: e.downs }));
  }

  /** Stops the background pings. Sandboxes are left as they are. */
  close(): void {
    clearInterval(this.timer);
  }

  /**
   * Pings `engine`; a down engine that answers is brought back, an up engine that fails
   * `failuresBeforeDown` times in a row is marked down. Concurrent checks share one ping.
   * @returns whether it is up afterwards.
   */
  checkEngine(engine: Engine, failuresBeforeDown = this.options.failuresBeforeDown): Promise<boolean> {
    engine.checking ??= this.ping(engine)
      .then(async (client) => {
        if (!client) {
          engine.failures += 1;
          if (engine.up && engine.failures >= failuresBeforeDown) this.markDown(engine);
        } else {
          engine.failures = 0;
          if (!engine.up) await this.bringBack(engine, client);
        }
        return engine.up;
      })
      .finally(() => {
        engine.checking = undefined;
      });
    return engine.checking;
  }

  private async ping(engine: Engine): Promise<Docker | undefined> {
    try {
      return await connectEngine(engine.endpoint, this.options.pingTimeoutMs);
    } catch {
      return undefined;
    }
  }

  private healthRound(): void {
    for (const engine of this.engines) void this.checkEngine(engine);
  }

  private markDown(engine: Engine): void {
    engine.up = false;
    engine.generation += 1;
    engine.downs += 1;
    for (const sandbox of engine.live) sandbox.abandon();
    this.options.log(`engine ${engine.endpoint} stopped answering; ${engine.live.size} sandbox(es) on it lost`);
    engine.live.clear();
  }

  private async bringBack(engine: Engine, client: Docker): Promise<void> {
    try {
      const stale = await client.listContainers({ all: true, filters: thisRunFilter() });
      await Promise.all(stale.map((c) => client.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined)));
      const target = { endpoint: engine.endpoint, docker: client };
      const source = this.engines.find((e) => e.up);
      for (const [tag, recipe] of this.recipes) {
        const engines = source ? [source, target] : [target];
        this.recordAliases(tag, await ensureImageOnEngines(engines, recipe, this.options.log));
      }
      engine.connected(client);
      this.options.log(`engine ${engine.endpoint} answers again (${stale.length} old container(s) removed)`);
    } catch (error) {
      this.options.log(`engine ${engine.endpoint} answers but could not be brought back: ${(error as Error).message}`);
    }
  }

  private recordAliases(canonical: string, tags: Map<string, string>): void {
    for (const [endpoint, tag] of tags) {
      const perEngine = this.aliases.get(canonical) ?? new Map<string, string>();
      if (tag === canonical) perEngine.delete(endpoint);
      else perEngine.set(endpoint, tag);
      this.aliases.set(canonical, perEngine);
    }
  }
}
