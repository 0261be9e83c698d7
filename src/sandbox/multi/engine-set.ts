import { ensureImage, type BuildLog } from '../../images/image-builder.js';
import type { ImageRecipe } from '../../images/recipe.js';
import { DockerRuntime } from '../docker/docker-sandbox.js';
import { isClusterTarget, loadCluster, parseClusterTarget } from '../kubernetes/cluster.js';
import { KubernetesRuntime } from '../kubernetes/kubernetes-sandbox.js';
import { connectEngine, defaultEndpoint } from '../docker/engine.js';
import type { SandboxRuntime } from '../types.js';
import type { EngineTarget } from './endpoints.js';
import { MultiEngineRuntime, type EngineStatus, type MultiEngineOptions } from './multi-engine-runtime.js';

/** Puts an image where sandboxes will run. */
export interface ImageProvisioning {
  /** Builds (or finds) `recipe`'s image. @returns the tag to put in a SandboxSpec. */
  ensureImage(recipe: ImageRecipe, log: BuildLog): Promise<string>;
}

interface OpenedEngines extends ImageProvisioning {
  runtime: SandboxRuntime;
  multi: MultiEngineRuntime | undefined;
  /** Stops what the runtime keeps running (a pod watch). */
  close?: () => void;
  /** One engine: its id for an image tag. */
  imageId?: (tag: string) => Promise<string | undefined>;
}

/**
 * The Docker engines an env's sandboxes run on — the one place engine targets become a
 * runtime and image provisioning. One target: a plain {@link DockerRuntime} and
 * `ensureImage` on that engine, so a single engine costs exactly what it did before there
 * were several. Several: a {@link MultiEngineRuntime} (sandboxes spread by weight, an
 * engine that stops answering skipped until it is back) and every image on every engine.
 *
 * Nothing connects until the first {@link runtime} or {@link ensureImage} call, so an env
 * that needs no Docker (SQL on embedded SQLite) never touches an engine. Give one set to
 * every env of a run: placement counts the sandboxes of all of them.
 */
export class EngineSet implements ImageProvisioning {
  private opened: Promise<OpenedEngines> | undefined;
  private multi: MultiEngineRuntime | undefined;
  private closeRuntime: (() => void) | undefined;
  private closed = false;

  /** @param targets at least one; `options` apply when there are several. */
  constructor(
    readonly targets: readonly EngineTarget[],
    private readonly options: Partial<MultiEngineOptions> = {},
  ) {
    if (targets.length === 0) throw new RangeError('EngineSet needs at least one engine target');
  }

  /** DOCKER_HOST, else the local socket. */
  static local(): EngineSet {
    return new EngineSet([{ endpoint: defaultEndpoint(), weight: 1 }]);
  }

  /** Whether sandboxes are pods of a Kubernetes cluster (`--engine k8s…`). */
  get kubernetes(): boolean {
    return isClusterTarget(this.targets[0]!.endpoint);
  }

  /** Whether sandboxes are spread over more than one engine. */
  get several(): boolean {
    return this.targets.length > 1;
  }

  private open(): Promise<OpenedEngines> {
    if (this.closed) throw new Error('EngineSet used after close()');
    this.opened ??= (async (): Promise<OpenedEngines> => {
      if (this.kubernetes) {
        // Pods run images of the nodes' engines (imagePullPolicy Never): built on the local
        // engine, which is the node's on a one-node cluster (see docs/kubernetes.md).
        const runtime = new KubernetesRuntime(await loadCluster(parseClusterTarget(this.targets[0]!.endpoint)));
        this.closeRuntime = () => runtime.close();
        if (this.closed) runtime.close();
        let docker: Promise<import('dockerode')> | undefined;
        return {
          runtime,
          multi: undefined,
          ensureImage: async (recipe, log) => ensureImage(await (docker ??= connectEngine()), recipe, log),
          imageId: async (tag) => (await (docker ??= connectEngine())).getImage(tag).inspect().then((image) => image.Id, () => undefined),
        };
      }
      if (!this.several) {
        const docker = await connectEngine(this.targets[0]!.endpoint);
        return {
          runtime: new DockerRuntime(docker),
          multi: undefined,
          ensureImage: (recipe, log) => ensureImage(docker, recipe, log),
          imageId: (tag) => docker.getImage(tag).inspect().then((image) => image.Id, () => undefined),
        };
      }
      const multi = await MultiEngineRuntime.connect(this.targets, this.options);
      this.multi = multi;
      if (this.closed) multi.close();
      return { runtime: multi, multi, ensureImage: (recipe, log) => multi.ensureImage(recipe, log) };
    })();
    // An engine that did not answer may answer on the next try.
    this.opened.catch(() => (this.opened = undefined));
    return this.opened;
  }

  /**
   * The runtime creating this set's sandboxes.
   * @throws EngineUnreachableError when the engine (with several: every engine) does not answer.
   */
  async runtime(): Promise<SandboxRuntime> {
    return (await this.open()).runtime;
  }

  /**
   * Builds or finds `recipe`'s image on every engine (with several: built once, copied to
   * the others, see {@link MultiEngineRuntime.ensureImage}).
   * @returns the tag to put in a SandboxSpec.
   * @throws EngineUnreachableError; ImageError when a build or copy fails.
   */
  async ensureImage(recipe: ImageRecipe, log: BuildLog): Promise<string> {
    let checked = this.checked.get(recipe);
    if (!checked) {
      checked = this.open().then((opened) => opened.ensureImage(recipe, log));
      this.checked.set(recipe, checked);
      // A failed check (engine down, build failed) is tried again on the next call.
      checked.catch(() => this.checked.delete(recipe));
    }
    return checked;
  }

  /** Images checked or built by this set, by recipe: each is checked once per process (per recipe object). */
  private readonly checked = new WeakMap<ImageRecipe, Promise<string>>();

  /**
   * The engine's id (`sha256:…`) of an image tag; undefined with several engines (a copied
   * image keeps its id, but which engine to ask is not fixed) or when the engine has no such image.
   */
  async imageId(tag: string): Promise<string | undefined> {
    return (await this.open()).imageId?.(tag);
  }

  /** Each engine's state and share of the sandboxes; undefined with one engine (not tracked) or before any use. */
  status(): EngineStatus[] | undefined {
    return this.multi?.status();
  }

  /** Stops the background health checks of several engines. Sandboxes are left as they are. */
  close(): void {
    this.closed = true;
    this.multi?.close();
    this.closeRuntime?.();
  }
}
