import { Command, CommanderError } from 'commander';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { shutdownUnderWay } from '../sandbox/lifecycle/shutdown.js';
import { registerCleanupCommand } from './cleanup-command.js';
import { registerBenchCommand } from './bench-command.js';
import { reportFailure, USAGE_ERROR_EXIT } from './error-boundary.js';
import { packageVersion } from './package-version.js';
import { usageLine } from './usage-errors.js';
import { registerCollectCommand } from './collect-command.js';
import { registerDatasetsCommand } from './datasets-command.js';
import { registerDoctorCommand } from './doctor-command.js';
import { addEnvLifecycle } from './env-lifecycle.js';
import { registerEvalCommand } from './eval-command.js';
import { registerExportCommand } from './export-command.js';
import { registerImagesCommand } from './images-command.js';
import { registerListCommand } from './list-command.js';
import { registerMockLlmCommand } from './mock-llm-command.js';
import { registerPlayCommand } from './play-command.js';
import { registerPlotCommand } from './plot-command.js';
import { registerReplayCommand } from './replay-command.js';
import { registerRescoreCommand } from './rescore-command.js';
import { registerRunCommand } from './run-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerSetupCommand } from './setup-command.js';
import { registerTrainCommand } from './train-command.js';
import { registerViewCommand } from './view-command.js';

/** The whole CLI; tests read its commands and flags (the docs check). Parsing happens in {@link runCli}. */
export const program = new Command()
  .name('intercode')
  .description('Interactive coding as RL environments: code is the action, execution output the observation, every episode in a Docker sandbox.')
  .version(packageVersion(), '-V, --version', 'print the version and exit')
  // Before any command is added: subcommands inherit both. A usage error (unknown option,
  // missing argument) becomes a CommanderError that runCli prints as one line, exit 2.
  .exitOverride()
  .configureOutput({ outputError: () => undefined });
registerSetupCommand(program);
registerDoctorCommand(program);
registerRunCommand(program);
registerPlayCommand(program);
registerReplayCommand(program);
registerEvalCommand(program);
registerMockLlmCommand(program);
registerImagesCommand(program);
registerCleanupCommand(program);
registerCollectCommand(program);
registerTrainCommand(program);
registerPlotCommand(program);
registerBenchCommand(program);
registerServeCommand(program);
registerExportCommand(program);
registerDatasetsCommand(program);
registerRescoreCommand(program);
registerViewCommand(program);
registerListCommand(program);
addEnvLifecycle(program, ['run', 'play', 'replay', 'rescore', 'collect', 'train', 'eval', 'serve']);

/** The one error boundary (src/cli/error-boundary.ts): one line on stderr, a non-zero status, no stack trace. */
async function fail(error: unknown): Promise<never> {
  // A signal's shutdown is removing sandboxes (failing episodes that used them): it exits when done.
  await shutdownUnderWay();
  process.exit(reportFailure(error));
}

/** Parses `argv` and runs the command; every error ends in one line on stderr and a non-zero exit status. */
export async function runCli(argv: readonly string[]): Promise<void> {
  // Errors thrown outside the command's promise (an event handler, a stream without an error listener).
  process.on('uncaughtException', (error) => void fail(error));
  process.on('unhandledRejection', (reason) => void fail(reason));
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help, --version, and help shown for no command (its own status): commander printed it.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') process.exit(error.exitCode);
      process.stderr.write(`${usageLine(program, argv.slice(2), error.message)}\n`);
      process.exit(USAGE_ERROR_EXIT);
    }
    await fail(error);
  }
}

// Run directly (`node --import tsx src/cli/main.ts …`, as some tests do): parse here. Through
// bin/intercode.js, which calls runCli itself, and when imported (the docs test), do not.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await runCli(process.argv);
