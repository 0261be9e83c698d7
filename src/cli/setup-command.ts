import type { Command } from 'commander';
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { btrfsDataRootStep, btrfsEngineLayout, DEFAULT_BTRFS_ENGINE_DIR, planSetup, probeHost, removeBtrfsEngine, runSetup, SYSTEM_DOCKERD, type DockerdLayout, type ImageBuilder, type SetupStep } from '../setup/index.js';
import { buildEnvImages, chooseImages, copyEnvImages } from './images-command.js';

/** `intercode setup`: makes a Docker engine answer (installing and starting one where it can) and builds the images. */
export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description(
      'make a Docker engine answer and build the images: as root on Debian/Ubuntu without an engine, install docker.io, ' +
        'debootstrap, runsc, gcc, libc6-dev, libseccomp-dev and btrfs-progs, register runsc, start dockerd (log: /var/log/intercode-dockerd.log) and wait for it; ' +
        'anywhere else print the commands for this machine and exit 1. ' +
        `The images: every env's (${chooseImages([], false, '--env').map((image) => image.name).join(', ')}), as \`intercode images build\` makes them`,
    )
    .option('--with-test-tools', 'also install what the test suite uses (chromium, tmux, python3-websockets, python3-venv, python3-pip, python3-setuptools, xfsprogs, prometheus; root on Debian/Ubuntu)')
    .option('--no-images', 'stop once the engine answers, without building the images')
    .option(
      '--btrfs-engine <GiB>',
      'instead of the system engine, make a second one whose data is on a loop-mounted btrfs of this size (a sparse file): there the engine ' +
        'holds each sandbox\'s disk limit instead of watching it (docs/security.md#disk); use it with --engine unix://DIR/docker.sock. Root only',
    )
    .option('--btrfs-dir <dir>', 'where the btrfs engine keeps its file system, socket, pidfile and log', DEFAULT_BTRFS_ENGINE_DIR)
    .option('--remove-btrfs-engine', 'stop the btrfs engine of --btrfs-dir, unmount and delete its file system and folder')
    .option('--json', 'print one JSON object: {"ok","situation","summary","endpoint","steps":[{"id","status","seconds","detail"}],"commands","elapsedSec"}; with --remove-btrfs-engine: {"removed":[…]}')
    .action(async (flags: { withTestTools?: boolean; images: boolean; btrfsEngine?: string; btrfsDir: string; removeBtrfsEngine?: boolean; json?: boolean }) => {
      const log = (line: string) => process.stderr.write(`[setup] ${line}\n`);
      if (flags.removeBtrfsEngine) {
        const removed = await removeBtrfsEngine(resolve(flags.btrfsDir));
        if (flags.json) process.stdout.write(`${JSON.stringify({ removed })}\n`);
        else console.log(removed.length > 0 ? removed.join('\n') : `nothing to remove in ${flags.btrfsDir}`);
        return;
      }
      let layout: DockerdLayout | undefined;
      let beforeEngine: SetupStep[] = [];
      if (flags.btrfsEngine !== undefined) {
        const gib = Number(flags.btrfsEngine);
        if (!Number.isInteger(gib) || gib < 1) throw new ConfigError('--btrfs-engine', `must be a whole number of GiB, at least 1, got "${flags.btrfsEngine}"`);
        if (process.getuid?.() !== 0) throw new ConfigError('--btrfs-engine', 'needs root (it mounts a file system and starts dockerd): run it with sudo');
        const dir = resolve(flags.btrfsDir);
        layout = btrfsEngineLayout(dir);
        beforeEngine = [btrfsDataRootStep(dir, gib * 1024 ** 3)];
      }
      const facts = layout
        ? await probeHost({ env: { ...process.env, DOCKER_HOST: '' }, defaultSocket: layout.socket, pidfile: layout.pidfile })
        : await probeHost();
      // The btrfs engine gets the system engine's images, copied (built there first where missing).
      const images: ImageBuilder = layout ? (endpoint, imageLog) => copyEnvImages(`unix://${SYSTEM_DOCKERD.socket}`, endpoint, imageLog) : (endpoint, imageLog) => buildEnvImages(endpoint, imageLog);
      const plan = planSetup(facts, {
        ...(layout ? { layout, beforeEngine } : {}),
        withTestTools: !!flags.withTestTools,
        images: flags.images ? images : false,
        imageNames: chooseImages([], false, '--env').map((image) => image.name),
      });
      const result = await runSetup(facts, plan, log, layout);
      if (flags.json) process.stdout.write(`${JSON.stringify(result)}\n`);
      else if (result.ok && layout) console.log(`ready: a btrfs engine answers at ${result.endpoint} (${result.elapsedSec} s); sandboxes there get a disk limit the engine holds; next: npx intercode run bash --engine ${result.endpoint}`);
      else if (result.ok) console.log(`ready: an engine answers at ${result.endpoint} (${result.elapsedSec} s); next: npx intercode run bash`);
      else {
        const failed = result.steps.find((step) => step.status === 'failed');
        const lines = [failed ? `setup failed at ${failed.id}: ${failed.detail}` : `setup cannot go on: ${result.summary}`];
        if (result.commands.length > 0) lines.push(failed ? 'to fix it, run:' : 'run:', ...result.commands.map((c) => `  ${c}`));
        console.log(lines.join('\n'));
      }
      if (!result.ok) process.exitCode = 1;
    });
}
