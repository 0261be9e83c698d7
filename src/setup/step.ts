import type { HostFacts } from './host-facts.js';

/**
 * Where set-up puts the engine it starts. The defaults are the system's (the socket every
 * Docker client finds); tests give a layout under a temporary folder, so a second engine
 * of their own never touches the machine's.
 */
export interface DockerdLayout {
  /** Unix socket the engine listens on. */
  socket: string;
  /** daemon.json: runsc is registered here (merged, other keys kept). */
  configFile: string;
  /** dockerd's stdout and stderr. */
  logFile: string;
  pidfile: string;
  /** Only for a non-system engine (tests, the btrfs engine): --data-root and --exec-root. */
  dataRoot?: string;
  execRoot?: string;
  /** --storage-driver (the btrfs engine's: btrfs); default: dockerd's choice. */
  storageDriver?: string;
}

export const SYSTEM_DOCKERD: DockerdLayout = {
  socket: '/var/run/docker.sock',
  configFile: '/etc/docker/daemon.json',
  logFile: '/var/log/intercode-dockerd.log',
  pidfile: '/var/run/docker.pid',
};

/** What a step gets: the facts set-up started from, where the engine goes, and where to report. */
export interface StepContext {
  facts: HostFacts;
  layout: DockerdLayout;
  /** One line of progress (stderr in the CLI). */
  log: (line: string) => void;
}

/** How a step ended: `done` when it changed something, `skipped` when there was nothing to do. */
export interface StepOutcome {
  status: 'done' | 'skipped';
  detail: string;
}

/**
 * One unit of set-up: install packages, register a runtime, start the engine, build the
 * images. A step checks what is there before changing anything, so running set-up again
 * skips what is done.
 */
export interface SetupStep {
  /** Stable id, in `--json` output. */
  readonly id: string;
  /** What it does, for progress lines. */
  readonly title: string;
  /** @throws SetupError naming the step, with the commands that fix it when there are any. */
  run(context: StepContext): Promise<StepOutcome>;
}
