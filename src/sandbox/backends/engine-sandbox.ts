import { SandboxError } from '../../errors.js';
import { liveSandboxes } from '../lifecycle/registry.js';
import type { AttachedProcess, AttachOptions, DiskLimit, ExecOptions, ExecResult, FileSystemChange, HarnessShell, Sandbox, SandboxFromHost, SandboxSpec } from '../types.js';

/** What a sandbox needs to know of the engine holding it. */
export interface HoldingEngine {
  readonly endpoint: string;
  /** Bumped each time the engine is found down: sandboxes of an older generation are lost. */
  readonly generation: number;
  /** Checks the engine after one of its sandboxes failed. @returns whether it answers. */
  check(): Promise<boolean>;
  /** The sandbox is gone (destroyed or lost); it no longer counts as load. */
  release(sandbox: Sandbox): void;
}

/**
 * A sandbox on one engine of a multi-engine runtime. Once its engine has been found down,
 * every method throws SandboxError SANDBOX_LOST without a round trip — even after the
 * engine is back, since the engine's restart took the container's processes with it — and
 * destroy() only lets go of it (the engine's return sweeps its containers away).
 */
export class EngineSandbox implements Sandbox {
  private readonly generation: number;
  /** Closed when the engine is found down: a FIFO shell does not go through the engine and would not notice. */
  private readonly processes = new Set<AttachedProcess>();

  constructor(
    private readonly inner: Sandbox,
    readonly spec: SandboxSpec,
    private readonly engine: HoldingEngine,
  ) {
    this.generation = engine.generation;
  }

  get id(): string {
    return this.inner.id;
  }

  /** The engine this sandbox runs on. */
  get endpoint(): string {
    return this.engine.endpoint;
  }

  launchThrough(shell: HarnessShell): void {
    this.inner.launchThrough?.(shell);
  }

  get lost(): boolean {
    return this.engine.generation !== this.generation;
  }

  private lostError(cause?: unknown): SandboxError {
    return new SandboxError('SANDBOX_LOST', `Sandbox ${this.id.slice(0, 12)}: its engine ${this.endpoint} stopped answering`, {
      details: { sandbox: this.id, endpoint: this.endpoint },
      cause,
    });
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    if (this.lost) throw this.lostError();
    try {
      return await run();
    } catch (error) {
      if (error instanceof SandboxError && error.code === 'SANDBOX_LOST' && !(await this.engine.check())) {
        throw this.lostError(error);
      }
      throw error;
    }
  }

  /**
   * Its engine is down: ends its attached processes (their users see them exit and, trying
   * again, SANDBOX_LOST) and stops counting it among the live sandboxes a shutdown removes.
   */
  abandon(): void {
    for (const process of this.processes) process.close();
    this.processes.clear();
    liveSandboxes.forget(this.inner);
  }

  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult> {
    return this.call(() => this.inner.exec(argv, options));
  }

  async attach(argv: readonly string[], options?: AttachOptions): Promise<AttachedProcess> {
    const process = await this.call(() => this.inner.attach(argv, options));
    if (this.lost) {
      process.close();
      throw this.lostError();
    }
    this.processes.add(process);
    return process;
  }

  restartProcesses(): Promise<void> {
    return this.call(() => this.inner.restartProcesses());
  }

  putArchive(tar: Buffer, destDir: string): Promise<void> {
    return this.call(() => this.inner.putArchive(tar, destDir));
  }

  getArchive(path: string): Promise<Buffer> {
    return this.call(() => this.inner.getArchive(path));
  }

  get disk(): DiskLimit | undefined {
    return this.inner.disk;
  }

  changes(reference?: Sandbox): Promise<FileSystemChange[]> {
    const inner = reference instanceof EngineSandbox ? reference.inner : reference;
    return this.call(() => this.inner.changes(inner));
  }

  /** The inner sandbox's, where it has one, each call failing as this sandbox's do once its engine is down. */
  get fromHost(): SandboxFromHost | undefined {
    const inner = this.inner.fromHost;
    if (!inner) return undefined;
    return {
      changes: (reference) => this.call(() => inner.changes(reference instanceof EngineSandbox ? reference.inner : reference)),
      fileOf: (path) => this.call(() => inner.fileOf(path)),
      setNextPid: (pid) => this.call(() => inner.setNextPid(pid)),
    };
  }

  async destroy(): Promise<void> {
    this.processes.clear();
    try {
      if (!this.lost) await this.inner.destroy();
    } catch (error) {
      if (!(error instanceof SandboxError) || (await this.engine.check())) throw error;
    } finally {
      this.engine.release(this);
    }
  }
}
