import type { BuildLog } from '../../images/image-builder.js';
import type { ImageRecipe } from '../../images/recipe.js';
import { defaultEndpoint } from '../docker/engine.js';
import type { SandboxRuntime, SandboxSettings } from '../types.js';
import type { BackendOptions, EngineStatus, EngineTarget, MultiEngineOptions, OpenedBackend, SandboxBackend } from './backend.js';
import { backendOf } from './backends.js';

/** Puts an image where sandboxes will run. */
export interface ImageProvisioning {
  /** Builds (or finds) `recipe`'s image. @returns the tag to put in a SandboxSpec. */
  ensureImage(recipe: ImageRecipe, log: BuildLog): Promise<string>;
}

/** What an {@link EngineSet} is made with: its sandboxes' settings, where engine events go, and how several Docker engines are watched. */
export interface EngineSetOptions extends Partial<Omit<MultiEngineOptions, 'sandboxes'>> {
  /** What every sandbox is made with (`--runtime`, `--disk-limit`). Default: the engines' defaults. */
  sandboxes?: SandboxSettings;
}

/**
 * The engines an env's sandboxes run on — the one place engine targets become a runtime and
 * image provisioning, through the backend their form names (see SANDBOX_BACKENDS): one
 * Docker engine, several (spread by weight, an engine that stops answering skipped until
 * it is back, every image on every engine), or a Kubernetes cluster.
 *
 * Nothing connects until the first {@link runtime} or {@link ensureImage} call, so an env
 * that needs no Docker (SQL on embedded SQLite) never touches an engine. Give one set to
 * every env of a run: placement counts the sandboxes of all of them.
 */
export class EngineSet implements ImageProvisioning {
  private opened: Promise<OpenedBackend> | undefined;
  private openedBackend: OpenedBackend | undefined;
  private closed = false;
  private readonly backend: SandboxBackend;
  private readonly options: BackendOptions;

  /** @param targets at least one, all of one backend; the health options apply to several Docker engines. */
  constructor(
    readonly targets: readonly EngineTarget[],
    options: EngineSetOptions = {},
  ) {
    if (targets.length === 0) throw new RangeError('EngineSet needs at least one engine target');
    this.backend = backendOf(targets[0]!.endpoint);
    this.options = { ...options, sandboxes: options.sandboxes ?? {} };
  }

  /** DOCKER_HOST, else the local socket; its sandboxes made with `sandboxes` (default: the engine's defaults). */
  static local(sandboxes: SandboxSettings = {}): EngineSet {
    return new EngineSet([{ endpoint: defaultEndpoint(), weight: 1 }], { sandboxes });
  }

  /** Whether an engine was connected to: false while no env has asked for a runtime or an image (embedded SQLite never does). */
  get connected(): boolean {
    return this.openedBackend !== undefined;
  }

  /** Whether sandboxes are spread over more than one engine. */
  get several(): boolean {
    return this.targets.length > 1;
  }

  private open(): Promise<OpenedBackend> {
    if (this.closed) throw new Error('EngineSet used after close()');
    this.opened ??= this.backend.open(this.targets, this.options).then((opened) => {
      this.openedBackend = opened;
      if (this.closed) opened.close();
      return opened;
    });
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
   * the others, see MultiEngineRuntime.ensureImage).
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
    return (await this.open()).imageId(tag);
  }

  /** Each engine's state and share of the sandboxes; undefined with one engine (not tracked) or before any use. */
  status(): EngineStatus[] | undefined {
    return this.openedBackend?.status();
  }

  /** Stops the background health checks of several engines. Sandboxes are left as they are. */
  close(): void {
    this.closed = true;
    this.openedBackend?.close();
  }
}
