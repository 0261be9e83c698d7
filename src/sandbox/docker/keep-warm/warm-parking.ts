import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setPriority } from 'node:os';
import { packagePath } from '../../../package-path.js';
import { HARNESS_CAPABILITY } from '../../harness-capability.js';
import { SHELL_SCRIPT } from '../../shell/shell-script.js';
import type { SandboxSpec, WarmRole } from '../../types.js';
import { MASKED_PATHS } from '../container-creation.js';
import type { DockerSandbox } from '../docker-sandbox.js';
import { channelRoot } from '../fifo-channel.js';
import { TEST_LABEL, ownerLabels } from '../labels.js';
import { channelDir, claimParked, listParked, warmName, type ParkedSandbox } from './warm-sandboxes.js';
import { liveKeeper } from './warm-keeper-lock.js';

/** The shell program's digest: part of a parked sandbox's key (see warmKey). */
const SHELL_DIGEST = createHash('sha256').update(SHELL_SCRIPT).digest('hex').slice(0, 16);

/** What a runtime's sandboxes are made with, as far as it decides whether a parked one fits. */
export interface ParkingConfiguration {
  /** The OCI runtime (undefined: the engine's default). */
  ociRuntime: string | undefined;
  /** The transport the runtime's sandboxes use now (parking needs `fifo`). */
  transport(): 'fifo' | 'attach';
  /** The disk limit of a sandbox for `spec`. */
  diskBytes(spec: SandboxSpec): number;
  /** The engine's id of an image (undefined when it cannot be inspected). */
  imageId(image: string): Promise<string | undefined>;
}

/**
 * Warm parking of one runtime's sandboxes: a clean sandbox left running after this process
 * ends, under a name that says what it fits and until when, for a later process to claim
 * (see warm-sandboxes.ts for the names and the claim); a detached keeper (warm-keeper.ts)
 * removes those whose time is up.
 */
export class WarmParking {
  constructor(
    private readonly docker: Docker,
    private readonly configuration: ParkingConfiguration,
  ) {}

  /**
   * The configuration a parked sandbox must match to be adopted for `spec`: the image's id
   * (a rebuilt tag is another image), the spec (limits, mounts, labels…), the OCI runtime,
   * the masked kernel paths, the transport and channel root, the disk limit, the test run,
   * and the shell program its control shell runs (another version of the harness may speak
   * another protocol to it).
   */
  private async warmKey(spec: SandboxSpec): Promise<string> {
    const imageId = await this.configuration.imageId(spec.image);
    if (imageId === undefined) throw new Error(`image ${spec.image} cannot be inspected`);
    const configuration = {
      imageId,
      spec,
      ociRuntime: this.configuration.ociRuntime ?? null,
      maskedPaths: MASKED_PATHS,
      transport: this.configuration.transport(),
      channels: this.configuration.transport() === 'fifo' ? channelRoot() : null,
      diskBytes: this.configuration.diskBytes(spec),
      testRun: ownerLabels()[TEST_LABEL] ?? null,
      shell: SHELL_DIGEST,
      // A sandbox made before agents' shells were confined lacks the capability they drop.
      harnessCapability: HARNESS_CAPABILITY,
    };
    return createHash('sha256').update(JSON.stringify(configuration)).digest('hex').slice(0, 16);
  }

  /**
   * Leaves `sandbox` running, clean, for `ttlMs` after this process is gone.
   * @returns false when it was not kept (remove it): parking is off, or the rename failed.
   */
  async park(sandbox: DockerSandbox, role: WarmRole, ttlMs: number): Promise<boolean> {
    // Without its keeper (code run from src/ before a build) a parked sandbox would never expire.
    if (!this.keepsWarm || ttlMs <= 0) return false;
    const key = await this.warmKey(sandbox.spec).catch(() => undefined);
    if (!key || !(await sandbox.parkAs(warmName(key, role, Date.now() + ttlMs, sandbox.tag), channelDir(sandbox.tag, 'warm')))) return false;
    // This process's next adoption lists again (and may take this one back).
    this.parkedLists.clear();
    this.startKeeper();
    return true;
  }

  /**
   * Whether sandboxes can be kept warm between processes: with the FIFO transport (the claim
   * on a parked sandbox is its channel directory, see warm-sandboxes.ts) and the compiled
   * keeper (code run from src/ before a build has none: a parked sandbox would never expire).
   */
  get keepsWarm(): boolean {
    this.keeperBuilt ??= existsSync(KEEPER_SCRIPT);
    return this.configuration.transport() === 'fifo' && this.keeperBuilt;
  }

  /** Whether the compiled keeper exists (looked up once). */
  private keeperBuilt: boolean | undefined;

  /** Parked sandboxes listed, per configuration and role, for {@link claim} to claim from (see PARKED_LIST_MS; a parking here clears it). */
  private readonly parkedLists = new Map<string, { listedAt: number; parked: Promise<ParkedSandbox[]> }>();

  /** The next parked sandbox of `key` and `role` this process claims; undefined when none is left. */
  private async claimNextParked(key: string, role: WarmRole): Promise<{ id: string; tag: string } | undefined> {
    const listKey = `${key}.${role}`;
    let listed = this.parkedLists.get(listKey);
    if (!listed || performance.now() - listed.listedAt > PARKED_LIST_MS) {
      listed = { listedAt: performance.now(), parked: listParked(this.docker, key, role) };
      this.parkedLists.set(listKey, listed);
    }
    const parked = await listed.parked.catch(() => [] as ParkedSandbox[]);
    for (let next = parked.shift(); next; next = parked.shift()) {
      const claimed = await claimParked(this.docker, next);
      if (claimed) return claimed;
    }
    return undefined;
  }

  /**
   * Claims a parked sandbox that fits `spec` in `role`: its container id and tag (its
   * channel directory is this process's from then on). Undefined when none is left.
   */
  async claim(spec: SandboxSpec, role: WarmRole): Promise<{ id: string; tag: string } | undefined> {
    const key = await this.warmKey(spec).catch(() => undefined);
    return key ? this.claimNextParked(key, role) : undefined;
  }

  /** The keeper this process started, until it exits (it takes a moment to write its pid file). */
  private keeperChild: ChildProcess | undefined;

  /**
   * Makes sure the process that removes parked sandboxes when their time is up
   * (warm-keeper.ts) runs: when none is alive, starts one, detached, so it outlives this
   * process. It exits when none is left (looking once more after letting go of its lock,
   * so a sandbox parked while it was exiting is never left without one).
   */
  private startKeeper(): void {
    if (liveKeeper() !== undefined || this.keeperChild) return;
    const socketPath = (this.docker.modem as { socketPath?: string }).socketPath!;
    const child = spawn(process.execPath, [KEEPER_SCRIPT, socketPath], { detached: true, stdio: 'ignore' });
    this.keeperChild = child;
    const gone = () => {
      if (this.keeperChild === child) this.keeperChild = undefined;
    };
    child.on('error', gone);
    child.on('exit', gone);
    // The lowest priority: its start-up alone would otherwise take a share of the cores from
    // the command that comes next, which it only has to outlive.
    try {
      if (child.pid !== undefined) setPriority(child.pid, KEEPER_NICENESS);
    } catch {
      // Not allowed here: it runs at ours.
    }
    child.unref();
  }
}

/**
 * How long a listing of parked sandboxes serves adoptions before the engine is asked again:
 * a pool filling itself adopts one sandbox after another, and each engine listing costs the
 * engine milliseconds of CPU per container it holds.
 */
const PARKED_LIST_MS = 2_000;

/** The keeper's niceness: the lowest priority there is (it removes idle sandboxes, nothing waits on it). */
const KEEPER_NICENESS = 19;

/** The compiled keeper of parked sandboxes (warm-keeper.ts). */
const KEEPER_SCRIPT = packagePath('dist', 'src', 'sandbox', 'docker', 'keep-warm', 'warm-keeper.js');
