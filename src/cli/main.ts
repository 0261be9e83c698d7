import { Command } from 'commander';
import { IntercodeError } from '../errors.js';
import { shutdownUnderWay } from '../sandbox/lifecycle/shutdown.js';
import { registerCleanupCommand } from './cleanup-command.js';
import { registerCollectCommand } from './collect-command.js';
import { addEnvLifecycle } from './env-lifecycle.js';
import { registerEvalCommand } from './eval-command.js';
import { registerExportCommand } from './export-command.js';
import { registerImagesCommand } from './images-command.js';
import { registerMockLlmCommand } from './mock-llm-command.js';
import { registerPlayCommand } from './play-command.js';
import { registerPlotCommand } from './plot-command.js';
import { registerReplayCommand } from './replay-command.js';
import { registerRunCommand } from './run-command.js';
import { registerTrainCommand } from './train-command.js';

const program = new Command()
  .name('intercode')
  .description('Interactive coding as RL environments: code is the action, execution output the observation, every episode in a Docker sandbox.')
  .showHelpAfterError();
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
registerExportCommand(program);
addEnvLifecycle(program, ['run', 'play', 'replay', 'collect', 'train', 'eval']);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // A signal's shutdown is removing sandboxes (failing episodes that used them): it exits when done.
  await shutdownUnderWay();
  if (error instanceof IntercodeError) {
    process.stderr.write(`intercode: ${error.message}\n`);
    process.exit(error.code === 'CONFIG_INVALID' ? 2 : 1);
  }
  throw error;
}
