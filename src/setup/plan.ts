import type { HostFacts } from './host-facts.js';
import type { DockerdLayout, SetupStep } from './step.js';
import { SYSTEM_DOCKERD } from './step.js';
import { ENGINE_PACKAGES, TEST_TOOL_PACKAGES, aptPackagesStep } from './steps/apt-packages.js';
import { buildImagesStep, type ImageBuilder } from './steps/build-images.js';
import { runscRuntimeStep } from './steps/runsc-runtime.js';
import { startDockerdStep, sudoDockerdCommand } from './steps/start-dockerd.js';

/**
 * The situations set-up tells apart. Two it handles itself (`engine-answers`: build the
 * images; `install-and-start`: root on Debian/Ubuntu with no engine); for every other one
 * it prints the commands that fix it and exits non-zero.
 */
export type Situation =
  | 'engine-answers'
  | 'install-and-start'
  | 'docker-host-unreachable'
  | 'rootless-engine-down'
  | 'permission-denied'
  | 'dockerd-not-answering'
  | 'needs-root'
  | 'not-debian';

export interface PlanOptions {
  layout?: DockerdLayout;
  /** Also install the test suite's tools (chromium, tmux, python3-websockets, python3-venv, python3-pip, python3-setuptools, xfsprogs, prometheus). */
  withTestTools?: boolean;
  /** Skip the image build (tests of the engine steps). */
  images?: ImageBuilder | false;
  /** The images the builder makes, by name, for the step's title (`bash, sql, …`). */
  imageNames?: readonly string[];
  /** Steps added after the engine is up and before the images (e.g. a storage driver). */
  extraSteps?: readonly SetupStep[];
  /** Steps run before the engine is started (the btrfs engine's file system). */
  beforeEngine?: readonly SetupStep[];
}

/** What set-up will do: steps to run, or commands for the user (and a non-zero exit). */
export type SetupPlan =
  | { situation: 'engine-answers' | 'install-and-start'; summary: string; steps: SetupStep[] }
  | { situation: Exclude<Situation, 'engine-answers' | 'install-and-start'>; summary: string; commands: string[] };

const isDebianLike = (facts: HostFacts) => facts.osIds.some((id) => id === 'debian' || id === 'ubuntu');
const isRootless = (endpoint: string) => /^unix:\/\/\/run\/user\/\d+\//.test(endpoint) || /\/\.docker\/run\/docker\.sock$/.test(endpoint);

/**
 * Decides what set-up does on a machine described by `facts` — a pure function, so each
 * situation is tested from probed facts without changing the machine.
 */
export function planSetup(facts: HostFacts, options: PlanOptions = {}): SetupPlan {
  const layout = options.layout ?? SYSTEM_DOCKERD;
  const tail: SetupStep[] = [...(options.extraSteps ?? []), ...(options.images ? [buildImagesStep(options.images, options.imageNames)] : [])];
  const testTools = options.withTestTools ? [aptPackagesStep('test-tools', 'install the test suite\'s tools', TEST_TOOL_PACKAGES, facts.root)] : [];
  const sudo = facts.root ? '' : 'sudo ';
  const again = `${sudo}npx intercode setup${options.withTestTools ? ' --with-test-tools' : ''}`;

  if (facts.engine.answers) {
    return {
      situation: 'engine-answers',
      summary: `Docker ${facts.engine.serverVersion} answers at ${facts.endpoint}`,
      steps: [...(isDebianLike(facts) ? testTools : []), ...tail],
    };
  }
  const why = facts.engine.message;
  if (facts.dockerHost && isRootless(facts.dockerHost)) {
    return {
      situation: 'rootless-engine-down',
      summary: `the rootless engine at DOCKER_HOST=${facts.dockerHost} does not answer (${why})`,
      commands: ['systemctl --user start docker', '# or, without systemd: dockerd-rootless.sh --iptables=false &', 'npx intercode setup'],
    };
  }
  const systemSocket = `unix://${layout.socket}`;
  if (facts.dockerHost && facts.dockerHost !== systemSocket && facts.dockerHost !== layout.socket) {
    return {
      situation: 'docker-host-unreachable',
      summary: `DOCKER_HOST=${facts.dockerHost} does not answer (${why}); setup starts engines only on this machine's default socket`,
      commands: [`docker -H ${facts.dockerHost} info   # see why that engine does not answer, and start it there`, `# or use this machine's engine: unset DOCKER_HOST && ${again}`],
    };
  }
  if (facts.engine.reason === 'permission-denied') {
    return {
      situation: 'permission-denied',
      summary: `an engine runs at ${facts.endpoint} but this user may not use its socket (${why})`,
      commands: ['sudo usermod -aG docker "$USER"', 'newgrp docker   # or log out and in again', 'npx intercode setup'],
    };
  }
  if (facts.dockerdPid !== undefined) {
    return {
      situation: 'dockerd-not-answering',
      summary: `dockerd runs (pid ${facts.dockerdPid}) but does not answer at ${facts.endpoint} (${why})`,
      commands: [`tail -n 50 ${layout.logFile}   # or: journalctl -u docker`, `${sudo}kill ${facts.dockerdPid}   # if it is stuck; then:`, again],
    };
  }
  if (!isDebianLike(facts) || !facts.commands['apt-get']) {
    return {
      situation: 'not-debian',
      summary: `no engine answers at ${facts.endpoint}, and setup installs one only on Debian or Ubuntu (this is ${facts.osName})`,
      commands: [
        '# install Docker Engine for your system: https://docs.docker.com/engine/install/',
        sudoDockerdCommand(SYSTEM_DOCKERD),
        'npx intercode setup',
      ],
    };
  }
  if (!facts.root) {
    const packages = [...ENGINE_PACKAGES, ...(options.withTestTools ? TEST_TOOL_PACKAGES : [])];
    return {
      situation: 'needs-root',
      summary: `no engine answers at ${facts.endpoint}; installing and starting one needs root`,
      commands: facts.commands.dockerd
        ? [sudoDockerdCommand(SYSTEM_DOCKERD), 'npx intercode setup', `# or let setup do it all: ${again}`]
        : [`sudo apt-get install -y ${packages.join(' ')}`, sudoDockerdCommand(SYSTEM_DOCKERD), 'npx intercode setup', `# or let setup do it all: ${again}`],
    };
  }
  return {
    situation: 'install-and-start',
    summary: `no engine answers at ${facts.endpoint}: installing Docker and starting dockerd (${facts.osName})`,
    steps: [
      aptPackagesStep('engine-packages', `install ${ENGINE_PACKAGES.join(', ')}`, ENGINE_PACKAGES),
      ...testTools,
      ...(options.beforeEngine ?? []),
      runscRuntimeStep,
      startDockerdStep(),
      ...tail,
    ],
  };
}
